from coldwatch.launch import entry

entry()
