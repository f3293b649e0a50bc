"""Reading and writing user files without harming them."""

from __future__ import annotations

import os
import stat
import tempfile
import threading
from pathlib import Path

_UMASK_LOCK = threading.Lock()  # os.umask is read by setting it: one thread at a time


class NotRewritten(OSError):
    """A file `apply` must leave alone: read-only, or changed since it was read."""


def new_file_mode() -> int:
    """The mode a file this process creates gets, as ``open`` would give it: ``0o666`` less the
    umask (a temporary file made by ``mkstemp`` is ``0o600``, which a file moved into place must
    not keep: a CI job or another user could not read it)."""
    with _UMASK_LOCK:
        mask = os.umask(0o022)
        os.umask(mask)
    return 0o666 & ~mask


def atomic_write_bytes(path: Path, data: bytes, expected: bytes | None = None) -> None:
    """Replace ``path`` with ``data`` atomically, keeping its file mode (a new file gets
    :func:`new_file_mode`). Never half-written.

    With ``expected`` (the bytes the new contents were computed from), the file is replaced only if
    it still holds them and is writable: a file that changed since it was read (an editor saved it,
    another tool rewrote it) or a read-only file raises :class:`NotRewritten` and is left as it is.
    A symbolic link stays a link: the file it points to is replaced."""
    path = Path(os.path.realpath(path))
    try:
        before = os.stat(path)
        mode = stat.S_IMODE(before.st_mode)
    except FileNotFoundError:
        before, mode = None, None
    if expected is not None:
        if before is None:
            raise NotRewritten(f"{path.name} was removed while ts2export was running; nothing written")
        if not mode & (stat.S_IWUSR | stat.S_IWGRP | stat.S_IWOTH) or not os.access(path, os.W_OK):
            raise NotRewritten("read-only file, not rewritten (make it writable to apply the fixes)")
        if path.read_bytes() != expected:
            raise NotRewritten("changed while ts2export was running; not rewritten (run apply again)")
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".ts2export.tmp", dir=path.parent)
    try:
        with os.fdopen(fd, "wb") as fh:
            fh.write(data)
            fh.flush()
            os.fsync(fh.fileno())
        os.chmod(tmp, mode if mode is not None else new_file_mode())
        if expected is not None and _signature(os.stat(path)) != _signature(before):
            raise NotRewritten("changed while ts2export was running; not rewritten (run apply again)")
        os.replace(tmp, path)
    except BaseException:
        try:
            os.unlink(tmp)
        except FileNotFoundError:
            pass
        raise


def _signature(st: os.stat_result) -> tuple:
    return (st.st_ino, st.st_size, st.st_mtime_ns, st.st_ctime_ns)
