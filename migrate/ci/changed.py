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


def run_changed(changed: list[Path], others: list[Path], run: Callable[[list[str]], object]) -> tuple[list, object]:
    """Check the changed files, and the files that share a migration unit with them: the readers of
    an artifact a changed file writes (and the writers of what a changed file reads).

    ``run(paths)`` runs the engine on explicit files and returns its run (results and program
    model). All the files are checked together, so that the program model links writers and readers
    exactly as a full run would (whether a reader is held back depends on its writer elsewhere);
    the results keep the changed files and the files linked to them by a unit."""
    if not changed:
        return [], None
    full = run([str(p) for p in [*changed, *others]])
    shown = {str(p) for p in changed}
    linked = full.program.unit_files(shown) if full.program is not None else set()
    return [r for r in full.results if r.path in shown or r.path in linked], full.program
