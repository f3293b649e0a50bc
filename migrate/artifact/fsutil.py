"""Atomic writes: a temp file in the target directory, then os.replace (with the mode the file had,
or the one a new file gets)."""

from __future__ import annotations

import contextlib
import os
import stat
import tempfile
from collections.abc import Iterator
from pathlib import Path

from ts2export.artifact.errors import ArtifactError
from ts2export.textio import new_file_mode


@contextlib.contextmanager
def atomic_path(target: str | os.PathLike[str]) -> Iterator[Path]:
    """Yield a temp path next to `target`; on success move it into place, on failure remove it."""
    target = Path(target)
    parent = target.parent if str(target.parent) else Path(".")
    if not parent.is_dir():
        raise ArtifactError(f"output directory does not exist: {parent}")
    fd, tmp = tempfile.mkstemp(prefix=f".{target.name}.", suffix=".tmp", dir=parent)
    os.close(fd)
    tmp_path = Path(tmp)
    try:
        yield tmp_path
        try:  # a file rewritten keeps its mode; a new one gets what `open` would give it
            mode = stat.S_IMODE(os.stat(target).st_mode)
        except FileNotFoundError:
            mode = new_file_mode()
        os.chmod(tmp_path, mode)
        os.replace(tmp_path, target)
    finally:
        if tmp_path.exists():
            tmp_path.unlink()


def write_bytes_atomic(target: str | os.PathLike[str], data: bytes) -> None:
    with atomic_path(target) as tmp:
        tmp.write_bytes(data)


def write_text_atomic(target: str | os.PathLike[str], text: str) -> None:
    with atomic_path(target) as tmp:
        tmp.write_text(text, encoding="utf-8")


# The ExecuTorch runtime writes diagnostics (cpuinfo probing) straight to file descriptor 2.
# The CLI turns this off with --verbose.
QUIET_NATIVE_STDERR = True


@contextlib.contextmanager
def native_stderr_silenced() -> Iterator[None]:
    """Send what native code writes to fd 2 to /dev/null for the duration (Python-level writes too)."""
    if not QUIET_NATIVE_STDERR:
        yield
        return
    import sys

    try:
        sys.stderr.flush()
        saved = os.dup(2)
    except (OSError, ValueError):
        yield
        return
    devnull = os.open(os.devnull, os.O_WRONLY)
    try:
        os.dup2(devnull, 2)
        yield
    finally:
        os.dup2(saved, 2)
        os.close(saved)
        os.close(devnull)
