#!/usr/bin/env bash
# Restart a model server's systemd unit on a GPU host and wait until it is ready.
# Usage: deploy.sh HOST UNIT [extra coldwatch wait options...]
#   RESTART=0 deploy.sh ...   only wait (the unit was restarted by someone else)
#   EVENTS=FILE deploy.sh ... also keep the NDJSON event stream in FILE
set -euo pipefail
host=${1:?usage: deploy.sh HOST UNIT [coldwatch options]}
unit=${2:?usage: deploy.sh HOST UNIT [coldwatch options]}
shift 2
if ! command -v coldwatch >/dev/null; then
  echo "deploy: coldwatch is not installed (pipx install git+https://github.com/OWNER/coldwatch, or pip install a built wheel)" >&2
  exit 2
fi
if [ "${RESTART:-1}" != 0 ]; then
  ssh -o BatchMode=yes "$host" "sudo systemctl restart $(printf '%q' "$unit")"
fi
set +e
if [ -n "${EVENTS:-}" ]; then
  coldwatch wait "$host" --unit "$unit" --output json "$@" > "$EVENTS"
else
  coldwatch wait "$host" --unit "$unit" "$@"
fi
code=$?
set -e
case $code in
  0) echo "deploy: $unit on $host is ready" ;;
  2) echo "deploy: coldwatch was called wrongly; see the message above" >&2 ;;
  3) echo "deploy: $unit failed to start; see the reason above" >&2 ;;
  4) echo "deploy: cannot reach $host" >&2 ;;
  5) echo "deploy: $unit stalled" >&2 ;;
  124) echo "deploy: $unit not ready before the deadline" >&2 ;;
  *) echo "deploy: coldwatch ended with $code" >&2 ;;
esac
exit $code
