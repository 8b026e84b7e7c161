"""The judge's parts: small pure rules that ``coldwatch.judge.Judge`` composes, one responsibility each.

- ``policy``: the frozen parameters of one watch and the rules' constants;
- ``outbox``: what the judge says (events for the sinks, actions for the node's probe);
- ``lifecycle``: failures, deaths and restarts (the supervisor's, and a start marker's in the log);
- ``liveness``: the stall and slower-than-usual rules over the liveness evidence;
- ``process``: the server's process tree sample by sample (CPU, disk, bandwidth, compilers);
- ``ports``: who holds the probed port, and where the log says the server listens;
- ``first_hour``: an attach (the server was up before the watch) and the launch banner;
- ``notes``: readings that only warn;
- ``outcomes``: the verdicts the rules build;
- ``views``: the frozen status view and the ``status`` snapshot.

Pure like the judge: no threads, no I/O, no clock.
"""
