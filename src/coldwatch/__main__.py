from coldwatch.cli import entry

entry()
