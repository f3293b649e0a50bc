"""Files that discovery finds but the engine does not process: broken symbolic links and files
over ``max-file-size`` (notebooks are processed: ts2export.engine.notebooks).

Each gets a result the reports count, so that nothing is skipped in silence where TorchScript may be:

* a source file larger than ``max-file-size`` (libcst needs about a minute per megabyte) is treated
  the same way: an error if it mentions TorchScript, else skipped quietly; it is never written;
* a symbolic link that loops or points to a missing file is an error (it cannot be read).
"""

from __future__ import annotations

import errno
import os
from dataclasses import replace
from pathlib import Path
from typing import Sequence

from ts2export.engine.tasks import FileResult, Options, Task

ENGINE_KINDS = ("python", "cpp", "notebook")
SIZED_KINDS = ("python", "cpp")  # set aside over max-file-size (a notebook's size is mostly its outputs)
TOO_LARGE = "too-large:"  # kind prefix of a set-aside source file, followed by its original kind


def set_aside_large(tasks: Sequence[Task], max_bytes: int) -> list[Task]:
    """Mark the source files larger than ``max_bytes`` so that the engine does not parse them."""
    out = []
    for t in tasks:
        if t.kind in SIZED_KINDS and _size(t.path) > max_bytes:
            t = replace(t, kind=TOO_LARGE + t.kind)
        out.append(t)
    return out


def result_for(task: Task, options: Options, max_bytes: int) -> FileResult:
    """The result for a task whose kind is not one the engine processes."""
    if task.kind.startswith(TOO_LARGE):
        return _mentions_torchscript(
            task, options, task.kind[len(TOO_LARGE):],
            f"too large to check ({_amount(_size(task.path))}; the limit is {_amount(max_bytes)}): raise "
            "max-file-size in [tool.ts2export] to check it",
        )
    if task.kind == "broken-link":
        why = "loops" if _loops(task.path) else f"points to a missing file ({os.readlink(task.path)})"
        return FileResult(path=task.path, error=f"cannot read: a symbolic link that {why}")
    return FileResult(path=task.path, error=f"not processed: unknown kind of file {task.kind!r}")


def _mentions_torchscript(task: Task, options: Options, kind: str, message: str) -> FileResult:
    try:
        data = Path(task.path).read_bytes()
    except OSError as exc:
        return FileResult(path=task.path, error=f"cannot read: {exc.strerror or exc}")
    from ts2export.engine.check import prefilter  # the rules and libcst: only for a file set aside
    from ts2export.engine.registry import select_rules

    rules = [r for r in select_rules(options.select, options.ignore + task.ignored) if kind in r.file_kinds]
    if not prefilter(data, rules):
        return FileResult(path=task.path)
    return FileResult(path=task.path, error=message)


def _amount(n: int) -> str:
    return f"{n / 1e6:.1f} MB" if n >= 100_000 else f"{n} bytes"


def _size(path: str) -> int:
    try:
        return os.stat(path).st_size
    except OSError:
        return 0  # the engine reports why it cannot be read


def _loops(path: str) -> bool:
    try:
        os.stat(path)
    except OSError as exc:
        return exc.errno == errno.ELOOP
    return False
