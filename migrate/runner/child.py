"""One program run in a forked child of the warm runner's server, made to look like a fresh
``python [-W OPTION]... SCRIPT ARGS`` (or ``python -m MODULE ARGS``, ``python -c CODE ARGS``) to
the program.

What a fresh interpreter would differ in, and how the child matches it:

* process: a session (and process group) of its own, default signal handlers;
* working directory, environment, ``argv``, ``sys.path`` (the script's folder, then the
  request's ``PYTHONPATH``, then the interpreter's own entries), ``sys.dont_write_bytecode``;
* standard streams: files (stdin from a file or ``/dev/null``);
* warnings: the interpreter's default filters, then the ``-W`` options, as at start-up;
* a ``sitecustomize`` on the request's ``PYTHONPATH`` that the server did not load runs first
  (``ts2export record``'s bootstrap is one);
* random state: the ``random`` module (and numpy's, where loaded) seeded afresh;
* ``__main__``: a new module holding the script, which stays ``sys.modules["__main__"]``, compiled
  without this file's ``from __future__`` flags (``dont_inherit``: string annotations would break
  TorchScript's reading of the program's annotations);
* the end: non-daemon threads joined, exit handlers run, streams flushed; the exit code of an
  uncaught ``SystemExit`` or exception as the interpreter gives it.
"""

from __future__ import annotations

import os
import signal
import sys
from dataclasses import dataclass


@dataclass(frozen=True)
class Base:
    """The server's interpreter state that each child starts from."""

    path: tuple[str, ...]  # sys.path without the server's PYTHONPATH entries and script folder
    pythonpath: tuple[str, ...]
    sitecustomize: str | None  # the file of the sitecustomize the server loaded, if any
    warnoptions: tuple[str, ...]
    libraries: tuple[str, ...] = ()  # the standard library's and site-packages' folders

    @staticmethod
    def capture() -> "Base":
        import sysconfig

        own = tuple(p for p in os.environ.get("PYTHONPATH", "").split(os.pathsep) if p)
        path = tuple(p for p in sys.path[1:] if p not in own)  # sys.path[0]: the server's own folder
        site = sys.modules.get("sitecustomize")
        paths = sysconfig.get_paths()
        libraries = tuple(sorted({paths[k] for k in ("stdlib", "platstdlib", "purelib", "platlib") if paths.get(k)}))
        return Base(path, own, getattr(site, "__file__", None), tuple(sys.warnoptions), libraries)


def run(request: dict, base: Base) -> None:
    """Run the request's program in this (forked) process, then exit with its code."""
    code = 1
    loaded = set(sys.modules)  # the server's modules: what the program imports beyond them may be learned
    try:
        _become_fresh(request, base)
        code = _run_program(request)
    except BaseException:  # noqa: BLE001 - anything before the program ran: report and exit 1
        try:
            import traceback

            traceback.print_exc()
        except BaseException:  # noqa: BLE001
            pass
    code = _finish(code)
    if request.get("learn"):
        _write_learned(request["learn"], loaded, base)
    os._exit(code)


def _write_learned(path: str, loaded: set, base: Base) -> None:
    """The modules the program imported that the server had not, and that the server may import
    for the next child: those of the interpreter's own library folders (the standard library and
    site-packages, as the server's ``sys.path`` finds them), never the program's own."""
    try:
        folders = tuple(os.path.join(os.path.realpath(f), "") for f in base.libraries)
        names = []
        for name, module in list(sys.modules.items()):
            if name in loaded or module is None:
                continue
            origin = getattr(module, "__file__", None)
            if isinstance(origin, str) and os.path.realpath(origin).startswith(folders):
                names.append(name)
        with open(path, "w", encoding="utf-8") as fh:
            fh.write("\n".join(names))
    except BaseException:  # noqa: BLE001 - learning is an optimisation: never the program's exit code
        pass


def _become_fresh(request: dict, base: Base) -> None:
    os.setsid()
    for sig in (signal.SIGTERM, signal.SIGHUP, signal.SIGQUIT, signal.SIGPIPE, signal.SIGCHLD):
        signal.signal(sig, signal.SIG_DFL)
    signal.signal(signal.SIGPIPE, signal.SIG_IGN)  # as Python sets it at start-up
    signal.signal(signal.SIGINT, signal.default_int_handler)
    _redirect(0, request.get("stdin") or os.devnull, os.O_RDONLY)
    _redirect(1, request["stdout"], os.O_WRONLY | os.O_CREAT | os.O_TRUNC)
    _redirect(2, request["stderr"], os.O_WRONLY | os.O_CREAT | os.O_TRUNC)
    os.chdir(request["cwd"])
    env = request["env"]
    os.environ.clear()
    os.environ.update(env)
    sys.dont_write_bytecode = bool(env.get("PYTHONDONTWRITEBYTECODE"))
    argv = list(request["argv"])
    pythonpath = [p for p in env.get("PYTHONPATH", "").split(os.pathsep) if p]
    # sys.path[0] as the interpreter sets it: the script's folder, the working directory for -m, "" for -c
    first = {"-m": os.getcwd(), "-c": ""}.get(argv[0]) if argv[0] in ("-m", "-c") else os.path.dirname(os.path.abspath(argv[0]))
    sys.path[:] = [first, *pythonpath, *[p for p in base.path if p not in pythonpath]]
    _warnings(list(request.get("warnoptions", ())))
    import random

    random.seed()
    numpy = sys.modules.get("numpy")
    if numpy is not None:
        try:
            numpy.random.seed()
        except Exception:  # noqa: BLE001
            pass
    _sitecustomize(pythonpath, base)


def _redirect(fd: int, path: str, flags: int) -> None:
    new = os.open(path, flags, 0o644)
    os.dup2(new, fd)
    os.close(new)


def _warnings(options: list[str]) -> None:
    import warnings

    warnings.resetwarnings()
    # the interpreter's default filters (a release build, no -X dev), then the options
    warnings.filterwarnings("default", category=DeprecationWarning, module="__main__")
    for category in (DeprecationWarning, PendingDeprecationWarning, ImportWarning, ResourceWarning):
        warnings.filterwarnings("ignore", category=category, append=True)
    sys.warnoptions[:] = options
    warnings._processoptions(options)  # what -W and PYTHONWARNINGS do at start-up
    env = os.environ.get("PYTHONWARNINGS")
    if env:
        warnings._processoptions([o for o in env.split(",") if o])


def _sitecustomize(pythonpath: list[str], base: Base) -> None:
    for folder in pythonpath:
        path = os.path.join(folder, "sitecustomize.py")
        if os.path.isfile(path) and os.path.abspath(path) != os.path.abspath(base.sitecustomize or ""):
            import importlib.util

            spec = importlib.util.spec_from_file_location("sitecustomize", path)
            module = importlib.util.module_from_spec(spec)
            sys.modules["sitecustomize"] = module
            try:
                spec.loader.exec_module(module)
            except Exception:  # noqa: BLE001 - Python reports a failing sitecustomize and goes on
                import traceback

                print("Error in sitecustomize; set PYTHONVERBOSE for traceback:", file=sys.stderr)
                traceback.print_exc()
            return


def _run_program(request: dict) -> int:
    import runpy
    import types

    argv = list(request["argv"])
    try:
        if argv[0] == "-m":
            sys.argv[:] = ["-m", *argv[2:]]  # runpy puts the module's file first
            runpy._run_module_as_main(argv[1], alter_argv=True)
        elif argv[0] == "-c":
            sys.argv[:] = ["-c", *argv[2:]]
            main = types.ModuleType("__main__")
            main.__dict__.update({"__builtins__": __builtins__, "__spec__": None, "__loader__": None})
            sys.modules["__main__"] = main
            exec(compile(argv[1], "<string>", "exec", dont_inherit=True), main.__dict__)
        else:
            script = os.path.abspath(argv[0])  # as the interpreter makes __file__ (3.9+)
            sys.argv[:] = argv
            with open(script, "rb") as fh:
                source = fh.read()
            main = types.ModuleType("__main__")
            main.__dict__.update({"__file__": script, "__cached__": None, "__builtins__": __builtins__})
            main.__spec__ = None
            main.__loader__ = None
            sys.modules["__main__"] = main
            exec(compile(source, script, "exec", dont_inherit=True), main.__dict__)
    except SystemExit as exc:
        return _exit_code(exc.code)
    except BaseException as exc:  # noqa: BLE001 - as the interpreter: print it, exit 1
        tb = _program_frames(exc.__traceback__)
        sys.excepthook(type(exc), exc.with_traceback(tb), tb)
        return 130 if isinstance(exc, KeyboardInterrupt) else 1
    return 0


def _program_frames(tb):
    """The traceback from the program's own first frame on (the runner's frames dropped)."""
    here = os.path.abspath(__file__)
    while tb is not None and tb.tb_next is not None and (
            os.path.abspath(tb.tb_frame.f_code.co_filename) == here or tb.tb_frame.f_globals.get("__name__") == "runpy"):
        tb = tb.tb_next
    return tb


def _exit_code(code) -> int:
    if code is None:
        return 0
    if isinstance(code, int):
        return code & 0xFF
    try:
        print(code, file=sys.stderr)
    except BaseException:  # noqa: BLE001
        pass
    return 1


def _finish(code: int) -> int:
    """What the interpreter does at its end: join threads, run exit handlers, flush streams."""
    try:
        import threading

        threading._shutdown()
    except BaseException:  # noqa: BLE001
        pass
    try:
        import atexit

        atexit._run_exitfuncs()
    except SystemExit as exc:  # an exit handler's sys.exit sets the code
        code = _exit_code(exc.code)
    except BaseException:  # noqa: BLE001
        pass
    for stream in (sys.stdout, sys.stderr):
        try:
            stream.flush()
        except BaseException:  # noqa: BLE001
            pass
    return code
