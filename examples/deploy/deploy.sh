#!/usr/bin/env bash
# Restart a model server's systemd unit on a GPU host and wait until it is ready.
# Usage: deploy.sh HOST UNIT [extra coldwatch wait options...]
#   RESTART=0 deploy.sh ...   only wait (the unit was restarted by someone else)
set -euo pipefail
host=${1:?usage: deploy.sh HOST UNIT [coldwatch options]}
unit=${2:?usage: deploy.sh HOST UNIT [coldwatch options]}
shift 2
if [ "${RESTART:-1}" != 0 ]; then
  ssh -o BatchMode=yes "$host" "sudo systemctl restart $(printf '%q' "$unit")"
fi
set +e
coldwatch wait "$host" --unit "$unit" "$@"
code=$?
set -e
case $code in
  0) echo "deploy: $unit on $host is ready" ;;
  3) echo "deploy: $unit failed to start; see the reason above" >&2 ;;
  4) echo "deploy: cannot reach $host" >&2 ;;
  5) echo "deploy: $unit stalled" >&2 ;;
  124) echo "deploy: $unit not ready before the deadline" >&2 ;;
esac
exit $code
