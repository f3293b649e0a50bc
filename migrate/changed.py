"""``check --diff-base REF``: the files changed against a git ref, and the readers they affect.

Which files count as changed: those ``git diff --name-only --merge-base REF`` lists (what the current
branch changed since it forked from REF: committed, staged and unstaged changes; deleted files
included so that their baseline entries can be reported gone) plus untracked files that git does not
ignore (a new file you have not added yet is a change too). Renames count as a deletion and an
addition. Only files under the paths given on the command line, and that discovery would check
(``exclude``, ``.gitignore``), are checked.
"""

from __future__ import annotations

import subprocess
from dataclasses import dataclass
from pathlib import Path
from typing import Callable, Iterable, Sequence

# Fact kinds (see ``Rule.fact``) of artifact writers and readers.
WRITER_KINDS = ("saved", "lowered")
READER_KINDS = ("loaded",)


class ChangedError(Exception):
    """Not a git repository, an unknown ref, no git: one clear line, exit 2."""


@dataclass(frozen=True)
class Changes:
    top: Path  # the repository's top folder
    files: frozenset[Path]  # absolute paths of changed files (deleted ones included)


def _git(args: Sequence[str], cwd: Path) -> str:
    try:
        proc = subprocess.run(["git", *args], cwd=cwd, capture_output=True, check=False)
    except FileNotFoundError:
        raise ChangedError("--diff-base needs git, and git is not installed") from None
    if proc.returncode != 0:
        raise _GitFailed(proc.stderr.decode("utf-8", "replace").strip())
    return proc.stdout.decode("utf-8", "surrogateescape")


class _GitFailed(Exception):
    pass


def changed_files(ref: str, where: Path) -> Changes:
    """Files changed against ``ref`` in the git repository that holds ``where``."""
    folder = where if where.is_dir() else where.parent
    folder = folder.resolve()
    try:
        top = Path(_git(["rev-parse", "--show-toplevel"], folder).strip())
    except _GitFailed:
        raise ChangedError(f"--diff-base: {folder} is not inside a git repository") from None
    try:
        _git(["rev-parse", "--verify", "--quiet", "--end-of-options", f"{ref}^{{commit}}"], top)
    except _GitFailed:
        raise ChangedError(f"--diff-base: {ref!r} is not a commit in {top} (a branch, tag or commit id; fetch it first in a shallow clone)") from None
    try:
        diff = _git(["diff", "--name-only", "--no-renames", "-z", "--merge-base", ref, "--"], top)
        untracked = _git(["ls-files", "--others", "--exclude-standard", "-z", "--full-name"], top)
    except _GitFailed as exc:
        raise ChangedError(f"--diff-base {ref}: git failed: {str(exc).splitlines()[0] if str(exc) else 'unknown error'}") from None
    names = [n for n in (diff + untracked).split("\0") if n]
    return Changes(top, frozenset((top / n).resolve() for n in names))


def select(discovered: Iterable[Path], changes: Changes) -> list[Path]:
    """The discovered files (the run's candidates) that changed."""
    return [p for p in discovered if Path(p).resolve() in changes.files]


def written_keys(results: Iterable) -> set[str]:
    """Artifact keys (paths) written by the files of ``results``."""
    return {f.key for r in results for f in r.facts if f.kind.startswith(WRITER_KINDS)}


def linked_readers(results: Iterable, writer_keys: set[str], exclude: set[str]) -> set[str]:
    """Paths of files (outside ``exclude``) that read an artifact one of ``writer_keys`` names.

    This is the seam for "a reader whose writer changed": today the engine links artifact writers
    and readers across files through facts (``Fact`` with kind saved/loaded and a key, grouped by
    ``engine.group_facts``). When the program model (units) lands, this function is the one to point
    at it; ``check --diff-base`` asks nothing else about links between files."""
    return {r.path for r in results if r.path not in exclude
            and any(f.kind.startswith(READER_KINDS) and f.key in writer_keys for f in r.facts)}


def mentions(path: Path, keys: set[str]) -> bool:
    """Cheap textual pre-filter: can this file read one of the artifact paths ``keys``?"""
    try:
        data = Path(path).read_bytes()
    except OSError:
        return False
    return any(k.encode("utf-8", "surrogateescape") in data for k in keys)


def read_keys(results: Iterable) -> set[str]:
    """Artifact keys (paths) read by the files of ``results``."""
    return {f.key for r in results for f in r.facts if f.kind.startswith(READER_KINDS)}


def run_changed(changed: list[Path], others: list[Path], run: Callable[[list[str]], list]) -> list:
    """Check the changed files, and the other files that read an artifact a changed file writes.

    ``run(paths)`` runs the engine on explicit files. When a changed file writes or reads an artifact
    path that some other file mentions, the changed files and those candidates are checked together
    (so the engine links writers and readers exactly as a full run would: a changed reader's finding
    depends on its writer elsewhere); of the candidates, only the readers of an artifact a changed
    file writes are kept in the results."""
    if not changed:
        return []
    first = run([str(p) for p in changed])
    keys = written_keys(first) | read_keys(first)
    candidates = [p for p in others if mentions(p, keys)] if keys else []
    if not candidates:
        return first
    both = run([str(p) for p in [*changed, *candidates]])
    shown = {r.path for r in first}
    readers = linked_readers(both, written_keys(r for r in both if r.path in shown), shown)
    return [r for r in both if r.path in shown or r.path in readers]
