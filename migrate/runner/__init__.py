"""The warm runner: many short Python programs run from one interpreter that has imported torch once.

Starting Python and importing torch costs seconds before a program does any work; the corpus
harness, the never-broken harness and recorded runs start hundreds of programs. A
:class:`~ts2export.runner.client.WarmRunner` starts one server process (``server``) that imports the
modules it is told to preload, then forks a child per program run. Each child starts from the
server's state, in which no program has run: it takes the run's working directory, ``argv``,
environment, warning options and ``sys.path`` as a fresh ``python script.py`` would, its standard
streams go to files, it runs in a process group of its own (a timeout kills the group), and its
exit code is the one a cold interpreter would give (``SystemExit``, an uncaught exception: 1, a
signal: 128 + N). Interpreter settings fixed at start-up (``PYTHONHASHSEED``, thread counts) are
fixed per server: a run that needs others gets a server of its own.

Imports: the standard library only (the server imports what it is told to preload). Where fork is
not available, :func:`~ts2export.runner.client.run_python` runs the program cold.
"""

from ts2export.runner.client import Completed, WarmRunner, run_python, shared_runner

__all__ = ["Completed", "WarmRunner", "run_python", "shared_runner"]
