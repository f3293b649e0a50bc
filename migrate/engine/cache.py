"""The result cache: a run of ``scan``/``check``/``diff`` over files that did not change is read back.

A file's findings depend on other files (the program model links writers and readers, units and
code that stays compiled), so an entry is the whole run's results, keyed on everything they are
computed from:

* ts2export's version and the bytes of its own source (the engine, the program model, the rules),
  the Python and libcst versions;
* every field of the engine's options (rule selection, fix mode, the config's inputs, root and
  external readers) and the bytes of the recording they name;
* every file of the run: its path, kind, per-file ignores and the SHA-256 of its bytes.

One exception to "another key": a run that found nothing at all (no finding, fix, note or error in
any file) is the run of every fix mode over the same files, so ``scan``, ``apply`` and ``diff`` of a
tree without TorchScript analyse it once.

Any change to any of these is another key: a change in one file re-checks the whole run, so a
finding that depends on another file's facts is never stale. Entries live in ``.ts2export_cache/``
at the project root (``TS2EXPORT_CACHE_DIR`` elsewhere), are written to a temporary file and
renamed into place (concurrent runs never see half an entry), the last :data:`KEEP` are kept, and
one that cannot be read is ignored (the run is done again). ``TS2EXPORT_NO_CACHE=1`` or
``--no-cache`` bypass it. Entries are pickles read back by an unpickler that only builds
ts2export's own result classes.
"""

from __future__ import annotations

import hashlib
import io
import os
import pickle
import sys
import tempfile
from dataclasses import fields
from functools import lru_cache
from pathlib import Path
from typing import Callable, Sequence

import ts2export
from ts2export.engine.tasks import FileResult, Options, Run, Task
from ts2export.model.facts import ProgramFacts
from ts2export.rule import Applicability, Finding

DIR_NAME = ".ts2export_cache"
KEEP = 8  # entries kept (the newest by use): a few trees or option sets side by side
FORMAT = 1  # bumped when the entries' layout changes


def disabled_by_env() -> bool:
    return os.environ.get("TS2EXPORT_NO_CACHE", "").strip().lower() not in ("", "0", "false", "no")


def cache_dir(root: Path) -> Path:
    override = os.environ.get("TS2EXPORT_CACHE_DIR")
    return Path(override) if override else Path(root) / DIR_NAME


@lru_cache(maxsize=1)
def code_digest() -> str:
    """ts2export's version and the bytes of its source files (a changed rule is another key)."""
    import importlib.util
    from importlib import metadata

    try:  # the installed distribution's version: importing libcst costs a warm run a fifth of a second
        libcst_version = metadata.version("libcst")
    except metadata.PackageNotFoundError:  # pragma: no cover - libcst is a dependency
        libcst_version = ""
    h = hashlib.sha256()
    h.update(f"{FORMAT}\0{ts2export.__version__}\0{sys.version_info[:2]}\0{libcst_version}".encode())

    for package in ("ts2export", "ts2export.rules"):  # migrate/ (the artifact wing included) and rules/
        folder = Path(importlib.util.find_spec(package).origin).parent  # found, not imported
        for path in sorted(folder.rglob("*.py")):
            h.update(path.relative_to(folder).as_posix().encode() + b"\0")
            h.update(hashlib.sha256(path.read_bytes()).digest())
    return h.hexdigest()


def run_key(tasks: Sequence[Task], options: Options) -> str | None:
    """The key of a run, or None when it cannot be computed (a file cannot be read: not cached)."""
    h = hashlib.sha256(code_digest().encode())
    for f in fields(Options):
        h.update(f"{f.name}={_stable(getattr(options, f.name))}\0".encode("utf-8", "surrogatepass"))
    try:
        if options.recording:
            h.update(hashlib.sha256(Path(options.recording).read_bytes()).digest())
        for t in sorted(tasks, key=lambda t: (t.path, t.kind)):
            data = t.data if t.data is not None else Path(t.path).read_bytes()
            h.update(f"{t.path}\0{t.kind}\0{','.join(t.ignored)}\0".encode("utf-8", "surrogatepass"))
            h.update(hashlib.sha256(data).digest())
    except OSError:
        return None
    return h.hexdigest()


def _stable(value) -> str:
    """A text of an option value that does not depend on dict order."""
    if isinstance(value, dict):
        return "{" + ",".join(f"{_stable(k)}:{_stable(v)}" for k, v in sorted(value.items(), key=lambda kv: repr(kv[0]))) + "}"
    if isinstance(value, (list, tuple)):
        return "[" + ",".join(_stable(v) for v in value) + "]"
    return repr(value)


_ALLOWED = {
    (FileResult.__module__, FileResult.__qualname__): FileResult,
    (Finding.__module__, Finding.__qualname__): Finding,
    (Applicability.__module__, Applicability.__qualname__): Applicability,
    (ProgramFacts.__module__, ProgramFacts.__qualname__): ProgramFacts,
    (Run.__module__, Run.__qualname__): Run,
    ("builtins", "frozenset"): frozenset,
    ("builtins", "set"): set,
}


class _Unpickler(pickle.Unpickler):
    """Builds only the result classes: an entry planted in a checkout cannot run code."""

    def find_class(self, module: str, name: str):
        found = _ALLOWED.get((module, name))
        if found is None:
            raise pickle.UnpicklingError(f"{module}.{name} is not a result class")
        return found


def _entry(folder: Path, key: str) -> Path:
    return folder / f"run-{key[:40]}.pickle"


def load(folder: Path, key: str) -> Run | None:
    """The run stored under ``key``, or None (none, unreadable, corrupt or another key)."""
    path = _entry(folder, key)
    try:
        data = path.read_bytes()
        stored_key, run = _Unpickler(io.BytesIO(data)).load()
    except Exception:  # missing, unreadable, truncated, from another version: run again
        return None
    if stored_key != key or not isinstance(run, Run) or not all(isinstance(r, FileResult) for r in run.results):
        return None
    try:
        os.utime(path)  # the newest by use are the ones kept
    except OSError:
        pass
    return run


def store(folder: Path, key: str, run: Run) -> None:
    """Keep ``run`` under ``key`` (atomically); never fails the command."""
    facts = ProgramFacts.of(run.program) if run.program is not None else None
    kept = Run([_portable(r) for r in run.results], facts)
    try:
        folder.mkdir(parents=True, exist_ok=True)
        gitignore = folder / ".gitignore"
        if not gitignore.exists():
            _write_atomic(gitignore, b"# ts2export's result cache (safe to delete)\n*\n")
        _write_atomic(_entry(folder, key), pickle.dumps((key, kept), protocol=pickle.HIGHEST_PROTOCOL))
        _prune(folder)
    except (OSError, pickle.PicklingError):
        pass  # a read-only tree, a full disk: the run's results stand, uncached


def _portable(r: FileResult) -> FileResult:
    for f in r.findings + r.fixed:
        f.fix = f.alternative = None  # libcst nodes: never kept (the engine drops them too)
    return r


def _write_atomic(path: Path, data: bytes) -> None:
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=".tmp-", suffix=".part")
    try:
        with os.fdopen(fd, "wb") as fh:
            fh.write(data)
        os.replace(tmp, path)
    except BaseException:
        try:
            os.unlink(tmp)
        except OSError:
            pass
        raise


def _prune(folder: Path) -> None:
    entries = []
    for p in folder.glob("run-*.pickle"):
        try:
            entries.append((p.stat().st_mtime, p))
        except OSError:
            continue  # another run removed it
    for _, p in sorted(entries, reverse=True)[KEEP:]:
        try:
            p.unlink()
        except OSError:
            pass


def _found_nothing(run: Run) -> bool:
    """No finding, fix, suppression, note or error in any file: the run's first pass found nothing,
    so no fix mode has anything to write or hold back."""
    return all(not (r.findings or r.fixed or r.suppressed or r.notes or r.error or r.changed) for r in run.results)


def _found_nothing_in_another_mode(tasks: Sequence[Task], options: Options, folder: Path) -> Run | None:
    """The same files' run in another fix mode, where it found nothing: a run's first pass does not
    depend on the fix mode, so ``scan`` then ``apply`` (then ``diff``) of a tree without TorchScript
    analyses it once."""
    from dataclasses import replace

    for fix in (None, "safe", "unsafe"):
        if fix == options.fix:
            continue
        other = run_key(tasks, replace(options, fix=fix))
        run = load(folder, other) if other is not None else None
        if run is not None and _found_nothing(run):
            return run
    return None


def cached_run(tasks: Sequence[Task], options: Options, folder: Path, compute: Callable[[], Run]) -> Run:
    """The engine's run of ``tasks`` (``compute()``: :func:`ts2export.engine.analyze`, say), read
    back from the cache folder (see :func:`cache_dir`) when nothing it depends on changed, stored
    there after it when computed."""
    key = run_key(tasks, options)
    if key is not None:
        hit = load(folder, key)
        if hit is None:
            hit = _found_nothing_in_another_mode(tasks, options, folder)
        if hit is not None:
            return hit
    run = compute()
    if key is not None and run_key(tasks, options) == key:  # no file changed while it ran
        store(folder, key, run)
    return run
