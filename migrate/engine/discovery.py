"""Which files a run looks at: given paths, .gitignore files (nested too), configured excludes."""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path
from typing import Iterable

import pathspec

PYTHON_SUFFIXES = {".py", ".pyi"}
NOTEBOOK_SUFFIXES = {".ipynb"}  # their code cells are checked as one module (ts2export.engine.notebooks)
CPP_SUFFIXES = {".cpp", ".cc", ".cxx", ".c++", ".h", ".hh", ".hpp", ".hxx", ".cu", ".cuh", ".mm"}

# Folders never worth scanning: virtualenvs, build outputs, caches, VCS metadata.
DEFAULT_EXCLUDES = [
    ".git/", ".hg/", ".svn/", ".venv/", "venv/", ".env/", ".tox/", ".nox/", "__pycache__/",
    "build/", "dist/", "site-packages/", "node_modules/", ".eggs/", "*.egg-info/",
    ".mypy_cache/", ".pytest_cache/", ".ruff_cache/", "_build/", "buck-out/",
]


class DiscoveryError(Exception):
    """A path the user gave does not exist or cannot be read."""


@dataclass(frozen=True)
class SourceFile:
    path: Path  # as the user will see it (relative to the cwd where possible)
    kind: str  # "python", "cpp", "notebook", or for files the engine does not process: "broken-link"


def file_kind(path: Path) -> str | None:
    suffix = path.suffix.lower()
    if suffix in PYTHON_SUFFIXES:
        return "python"
    if suffix in CPP_SUFFIXES:
        return "cpp"
    if suffix in NOTEBOOK_SUFFIXES:
        return "notebook"
    return None


def display_path(path: Path) -> Path:
    try:
        return path.relative_to(Path.cwd())
    except ValueError:
        return path


def _is_virtualenv(folder: Path) -> bool:
    return (folder / "pyvenv.cfg").is_file() or (folder / "conda-meta").is_dir()


class _Ignores:
    """Stack of gitignore specs, each matched relative to the folder that holds it."""

    def __init__(self, root: Path, excludes: Iterable[str]) -> None:
        self.root = root
        self.layers: list[tuple[Path, pathspec.GitIgnoreSpec]] = [
            (root, pathspec.GitIgnoreSpec.from_lines(DEFAULT_EXCLUDES)),
        ]
        excludes = list(excludes)
        if excludes:
            self.layers.append((root, pathspec.GitIgnoreSpec.from_lines(excludes)))

    def with_gitignore(self, folder: Path) -> "_Ignores":
        gi = folder / ".gitignore"
        if not gi.is_file():
            return self
        try:
            lines = gi.read_text(encoding="utf-8", errors="replace").splitlines()
        except OSError:
            return self
        child = _Ignores.__new__(_Ignores)
        child.root = self.root
        child.layers = [*self.layers, (folder, pathspec.GitIgnoreSpec.from_lines(lines))]
        return child

    def ignored(self, path: Path, is_dir: bool) -> bool:
        verdict = False
        for base, spec in self.layers:
            try:
                rel = path.relative_to(base).as_posix()
            except ValueError:
                continue
            if rel in ("", "."):
                continue
            result = spec.check_file(rel + "/" if is_dir else rel)
            if result.include is not None:
                verdict = result.include
        return verdict


def _gitignores_above(folder: Path, stop: Path, ignores: _Ignores) -> _Ignores:
    """Apply .gitignore files between the config root and ``folder`` (a given path may be deep)."""
    chain = []
    current = folder
    while True:
        chain.append(current)
        if current == stop or current.parent == current:
            break
        current = current.parent
    if stop not in chain:
        return ignores.with_gitignore(folder)
    for f in reversed(chain):
        ignores = ignores.with_gitignore(f)
    return ignores


def discover(paths: Iterable[Path], root: Path, excludes: Iterable[str] = ()) -> list[SourceFile]:
    """Files under ``paths`` that ts2export checks, sorted, without duplicates.

    A path given explicitly is always checked when it is a file of a known kind; folders are
    walked with ignores applied. Symlinked folders are followed once (no loops)."""
    root = root.resolve()
    base = _Ignores(root, excludes)
    out: dict[Path, SourceFile] = {}
    for given in paths:
        if given.is_symlink() and not given.exists():
            raise DiscoveryError(f"{given}: broken symbolic link (it loops, or points to a missing file)")
        if not given.exists():
            raise DiscoveryError(f"{given}: no such file or folder")
        if given.is_file():
            kind = file_kind(given)
            if kind is None:
                raise DiscoveryError(f"{given}: not a Python or C++ source file")
            out.setdefault(given.resolve(), SourceFile(display_path(given.absolute()), kind))
            continue
        start = given.resolve()
        ignores = _gitignores_above(start, root, base)
        seen_dirs: set[Path] = set()
        _walk(start, given.absolute(), ignores, seen_dirs, out)
    return sorted(out.values(), key=lambda f: f.path.as_posix())


def _walk(real: Path, shown: Path, ignores: _Ignores, seen: set[Path], out: dict[Path, SourceFile]) -> None:
    if real in seen:
        return
    seen.add(real)
    ignores = ignores.with_gitignore(real)
    try:
        entries = sorted(os.scandir(real), key=lambda e: e.name)
    except OSError as exc:
        raise DiscoveryError(f"{shown}: cannot read folder: {exc.strerror}") from None
    for entry in entries:
        entry_path = Path(entry.path)
        try:
            is_dir = entry.is_dir()  # follows symlinks
        except OSError:  # a symbolic link loop
            is_dir = None
        if is_dir is None or not is_dir and entry.is_symlink() and not entry.is_file():
            # A link that loops or points nowhere: reported (it cannot be read), never followed.
            if file_kind(entry_path) is not None and not ignores.ignored(entry_path, False):
                out.setdefault(Path(os.path.abspath(entry_path)), SourceFile(display_path(shown / entry.name), "broken-link"))
            continue
        if is_dir:
            if ignores.ignored(entry_path, True) or _is_virtualenv(entry_path):
                continue
            _walk(_real(entry, entry_path), shown / entry.name, ignores, seen, out)
        elif entry.is_file():
            kind = file_kind(entry_path)
            if kind is None or ignores.ignored(entry_path, False):
                continue
            out.setdefault(_real(entry, entry_path), SourceFile(display_path(shown / entry.name), kind))


def _real(entry: os.DirEntry, path: Path) -> Path:
    """The real path of an entry of a folder that is itself a real path: the entry, unless it is a
    symbolic link (no realpath call per file)."""
    return path.resolve() if entry.is_symlink() else path
