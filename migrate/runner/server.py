"""The warm runner's server: ``python -m ts2export.runner.server PRELOAD...``.

It imports the modules named on its command line and says ``{"ready": [the modules it loaded]}``,
then reads requests (one JSON object a line) from the file descriptor in ``TS2EXPORT_RUNNER_FDS``
("read,write") and forks a child per request. It answers each request twice on the write descriptor: ``{"pid": N}`` once the child exists (the
client kills the child's process group on a timeout), then ``{"status": S}`` (the wait status)
once it has ended. One request at a time; end of input ends the server.

The server itself runs no program code and no torch operation (a fork after torch has started its
thread pools is not safe), only imports.
"""

from __future__ import annotations

import importlib
import json
import os
import sys
import threading

FDS_ENV = "TS2EXPORT_RUNNER_FDS"
_learning = True  # see _preload


def main(argv: list[str]) -> int:
    read_fd, write_fd = (int(x) for x in os.environ.pop(FDS_ENV).split(","))
    os.set_inheritable(read_fd, False)
    os.set_inheritable(write_fd, False)
    import warnings

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        for name in argv:
            try:
                importlib.import_module(name)
            except Exception as exc:  # noqa: BLE001 - a child then imports it itself, and fails as a cold run would
                print(f"ts2export runner: could not preload {name}: {exc}", file=sys.stderr)
    from ts2export.runner import child

    base = child.Base.capture()
    requests = os.fdopen(read_fd, "r", encoding="utf-8")
    answers = os.fdopen(write_fd, "w", encoding="utf-8")
    answers.write(json.dumps({"ready": sorted(n for n in argv if n in sys.modules)}) + "\n")
    answers.flush()
    for line in requests:
        if not line.strip():
            continue
        request = json.loads(line)
        if not _learning:
            request.pop("learn", None)
        sys.stdout.flush()
        sys.stderr.flush()
        pid = os.fork()
        if pid == 0:  # the child: never returns
            requests.close()
            answers.close()
            child.run(request, base)
        answers.write(json.dumps({"pid": pid}) + "\n")
        answers.flush()
        _, status = os.waitpid(pid, 0)
        learned = _read_learned(request.get("learn"))  # before the answer: the client then removes the file
        answers.write(json.dumps({"status": status}) + "\n")
        answers.flush()
        if learned and _learning and threading.active_count() == 1:
            _preload(learned)
    return 0


def _read_learned(path: str | None) -> list[str]:
    if not path:
        return []
    try:
        with open(path, encoding="utf-8") as fh:
            return [n for n in fh.read().split("\n") if n and n not in sys.modules]
    except OSError:
        return []


def _preload(names: list[str]) -> None:
    """Import what a child imported from the interpreter's libraries, so that the next child has
    it (a program that imports ExecuTorch pays for it once per server, not once per run). Never a
    module that leaves a thread running: a fork is only safe from a single thread, so learning
    stops for good at the first one that does."""
    global _learning
    import warnings

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        for name in names:
            if name in sys.modules:
                continue
            try:
                importlib.import_module(name)
            except BaseException:  # noqa: BLE001 - the next child imports it itself, as a cold run would
                pass
            if threading.active_count() > 1:
                _learning = False
                return


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
