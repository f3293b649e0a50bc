"""A model store: the TorchScript artifacts that `migrate-artifact` migrates in bulk.

A store is given as a directory (every ``*.pt`` / ``*.ptl`` below it, sidecar inputs files
``*.inputs.pt`` excepted), a glob (``'models/**/*.pt'``) or a manifest file (``*.txt`` or
``*.jsonl``, one artifact per line). Each artifact gets a path relative to the store's root (the
directory, the glob's folder before its first wildcard, the manifest's folder): its outputs mirror
that layout under ``--out``.

Manifest lines (blank lines and ``#`` comments are skipped; paths relative to the manifest's folder):

    path/to/model.pt [--input SPEC]... [--inputs FILE] [--method NAME]... [--lower|--no-lower] [--package|--no-package]
    {"path": "model.pt", "input": ["float32[B=1..8,4]"], "inputs": "batch.pt", "lower": false}

Inputs per artifact, the first found wins: the manifest entry's, a sidecar file beside the artifact
(``model.inputs.pt`` for ``model.pt``, ``torch.save``'d like ``--inputs``), a recording
(``--recording``), the ``--input``/``--inputs`` given on the command line. An artifact with none is
reported ``no-inputs``: a saved TorchScript file keeps no input shapes, and nothing is guessed.
"""

from __future__ import annotations

import dataclasses
import glob
import hashlib
import json
import os
import shlex
import zipfile
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from ts2export.artifact.errors import ArtifactError

ARTIFACT_SUFFIXES = (".pt", ".ptl")
SIDECAR_SUFFIX = ".inputs.pt"
MANIFEST_SUFFIXES = (".txt", ".jsonl")
_GLOB_CHARS = set("*?[")
# Per-entry options a manifest line may set (flags), and those that take a value.
_FLAGS = {"--lower": ("lower", True), "--no-lower": ("lower", False), "--package": ("package", True),
          "--no-package": ("package", False)}
_VALUED = {"--input": "input", "-i": "input", "--inputs": "inputs", "--method": "method", "-m": "method"}


@dataclasses.dataclass
class Entry:
    """One artifact of the store, with where its inputs come from."""

    path: Path  # the file
    rel: str  # its path relative to the store's root, POSIX separators
    specs: list[str] = dataclasses.field(default_factory=list)
    inputs_file: str | None = None
    inputs_source: str | None = None  # "manifest", "sidecar", "recording", "command line" or None
    options: dict[str, Any] = dataclasses.field(default_factory=dict)  # per-entry: method, lower, package
    sha256: str = ""

    @property
    def output(self) -> str:
        """The output folder, relative to --out: the relative path without its suffix."""
        return self.rel[: -len(Path(self.rel).suffix)] if Path(self.rel).suffix else self.rel + "_export"


@dataclasses.dataclass
class Store:
    root: Path
    kind: str  # "directory", "glob" or "manifest"
    source: str  # what the user gave
    entries: list[Entry]


def is_store_argument(arg: str) -> bool:
    """A directory, a glob, or a manifest file (*.txt, *.jsonl): the model-store mode. Anything
    else is a single artifact, as before."""
    p = Path(arg)
    if p.is_dir() or arg.endswith(("/", os.sep)):
        return True
    if not p.exists() and _GLOB_CHARS & set(arg):
        return True
    return p.suffix.lower() in MANIFEST_SUFFIXES


def discover(arg: str, exclude: Path | None = None) -> Store:
    """The store named by `arg` (see is_store_argument), its entries sorted by relative path;
    `exclude` (the output folder) is never searched. Errors a user can cause raise ArtifactError."""
    p = Path(arg)
    if p.is_dir():
        root = p
        files = [f for suffix in ARTIFACT_SUFFIXES for f in p.rglob(f"*{suffix}")]
        store = Store(root, "directory", arg, _entries(root, files, exclude))
    elif p.suffix.lower() in MANIFEST_SUFFIXES and not (_GLOB_CHARS & set(arg)):
        store = _manifest(p)
    elif not p.exists() and _GLOB_CHARS & set(arg):
        root = _glob_root(arg)
        files = [Path(f) for f in glob.glob(arg, recursive=True) if Path(f).is_file()]
        store = Store(root, "glob", arg, _entries(root, files, exclude))
    elif not p.exists():
        raise ArtifactError(f"{arg}: no such directory")
    else:
        raise ArtifactError(f"{arg}: not a directory, glob or manifest")
    if not store.entries:
        what = {"directory": f"no *.pt or *.ptl file under {arg}", "glob": f"the glob {arg!r} matches no file",
                "manifest": f"{arg}: the manifest lists no artifact"}[store.kind]
        raise ArtifactError(what)
    return store


def _glob_root(pattern: str) -> Path:
    parts = Path(pattern).parts
    fixed = []
    for part in parts:
        if _GLOB_CHARS & set(part):
            break
        fixed.append(part)
    return Path(*fixed) if fixed else Path(".")


def _rel(root: Path, f: Path) -> str:
    return Path(os.path.relpath(f, root)).as_posix()


def _entries(root: Path, files: Sequence[Path], exclude: Path | None) -> list[Entry]:
    skip = exclude.resolve() if exclude is not None else None
    out = {}
    for f in files:
        if f.name.endswith(SIDECAR_SUFFIX) or not f.is_file():
            continue
        if skip is not None and (f.resolve() == skip or skip in f.resolve().parents):
            continue
        rel = _rel(root, f)
        out[rel] = Entry(f, rel)
    return [out[k] for k in sorted(out)]


# ---- manifests -------------------------------------------------------------------------------------


def _manifest(path: Path) -> Store:
    try:
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        raise ArtifactError(f"{path}: no such manifest") from None
    except (OSError, UnicodeDecodeError) as exc:
        raise ArtifactError(f"{path}: cannot read the manifest: {exc}") from None
    root = path.parent
    entries: dict[str, Entry] = {}
    for number, line in enumerate(text.splitlines(), 1):
        line = line.strip()
        if not line or line.startswith("#"):
            continue
        where = f"{path}:{number}"
        entry = _json_line(line, where) if line.startswith("{") else _text_line(line, where)
        file = Path(entry.pop("path"))
        file = file if file.is_absolute() else root / file
        rel = _rel(root, file)
        if rel.startswith("../"):
            raise ArtifactError(f"{where}: {file} lies outside the manifest's folder {root}")
        if rel in entries:
            raise ArtifactError(f"{where}: {rel} is listed twice")
        if not file.is_file():
            raise ArtifactError(f"{where}: {file}: no such file")
        inputs = entry.pop("inputs", None)
        if inputs is not None:
            inputs = str(Path(inputs) if Path(inputs).is_absolute() else root / inputs)
            if not Path(inputs).is_file():
                raise ArtifactError(f"{where}: --inputs {inputs}: no such file")
        specs = entry.pop("input", [])
        if specs and inputs:
            raise ArtifactError(f"{where}: give --input or --inputs, not both")
        source = "manifest" if specs or inputs else None
        entries[rel] = Entry(file, rel, list(specs), inputs, source, entry)
    return Store(root, "manifest", str(path), [entries[k] for k in sorted(entries)])


def _text_line(line: str, where: str) -> dict[str, Any]:
    try:
        words = shlex.split(line, comments=True)
    except ValueError as exc:
        raise ArtifactError(f"{where}: cannot read the line: {exc}") from None
    entry: dict[str, Any] = {"path": words[0]}
    i = 1
    while i < len(words):
        word = words[i]
        if word in _FLAGS:
            key, value = _FLAGS[word]
            entry[key] = value
            i += 1
            continue
        if word not in _VALUED:
            raise ArtifactError(
                f"{where}: unknown option {word!r} (a line is: PATH [--input SPEC]... [--inputs FILE] [--method NAME]... "
                "[--lower|--no-lower] [--package|--no-package])"
            )
        if i + 1 >= len(words):
            raise ArtifactError(f"{where}: {word} needs a value")
        key = _VALUED[word]
        if key == "inputs":
            entry["inputs"] = words[i + 1]
        else:
            entry.setdefault(key, []).append(words[i + 1])
        i += 2
    return entry


def _json_line(line: str, where: str) -> dict[str, Any]:
    try:
        data = json.loads(line)
    except ValueError as exc:
        raise ArtifactError(f"{where}: not valid JSON: {exc}") from None
    if not isinstance(data, dict) or not isinstance(data.get("path"), str):
        raise ArtifactError(f'{where}: a JSON line is an object with a "path" string')
    unknown = set(data) - {"path", "input", "inputs", "method", "lower", "package"}
    if unknown:
        raise ArtifactError(f"{where}: unknown key(s) {', '.join(sorted(unknown))}")
    out: dict[str, Any] = {"path": data["path"]}
    for key in ("input", "method"):
        value = data.get(key)
        if value is not None:
            value = [value] if isinstance(value, str) else value
            if not (isinstance(value, list) and all(isinstance(v, str) for v in value)):
                raise ArtifactError(f'{where}: "{key}" is a string or a list of strings')
            out[key] = value
    if data.get("inputs") is not None:
        if not isinstance(data["inputs"], str):
            raise ArtifactError(f'{where}: "inputs" is a file name')
        out["inputs"] = data["inputs"]
    for key in ("lower", "package"):
        if key in data:
            if not isinstance(data[key], bool):
                raise ArtifactError(f'{where}: "{key}" is true or false')
            out[key] = data[key]
    return out


# ---- inputs, hashes, shards, corruption -------------------------------------------------------------------


def sidecar(path: Path) -> Path:
    """`model.inputs.pt` beside `model.pt`."""
    return path.with_name(path.stem + SIDECAR_SUFFIX)


def resolve_inputs(
    store: Store,
    recorded: Callable[[Entry], str | None] | None = None,
    specs: Sequence[str] = (),
    inputs_file: str | None = None,
) -> None:
    """Give each entry its inputs, the first found winning: its manifest entry, a sidecar file, the
    recording (`recorded(entry)` returns an inputs file or None), then the command line's."""
    for e in store.entries:
        if e.inputs_source is not None:
            continue
        side = sidecar(e.path)
        if side.is_file():
            e.inputs_file, e.inputs_source = str(side), "sidecar"
            continue
        found = recorded(e) if recorded is not None else None
        if found is not None:
            e.inputs_file, e.inputs_source = found, "recording"
        elif specs or inputs_file:
            e.specs, e.inputs_file, e.inputs_source = list(specs), inputs_file, "command line"


def file_sha256(path: Path) -> str:
    h = hashlib.sha256()
    with open(path, "rb") as fh:
        for block in iter(lambda: fh.read(1 << 20), b""):
            h.update(block)
    return h.hexdigest()


def parse_shard(text: str) -> tuple[int, int]:
    """`K/N` (1 <= K <= N) -> (K, N)."""
    try:
        k, n = (int(x) for x in text.split("/"))
    except ValueError:
        raise ArtifactError(f"--shard {text!r}: expected K/N, e.g. 1/4") from None
    if not 1 <= k <= n:
        raise ArtifactError(f"--shard {text!r}: K must be between 1 and N")
    return k, n


def in_shard(rel: str, shard: tuple[int, int] | None) -> bool:
    """Deterministic: sha256 of the relative path, modulo N, equals K - 1."""
    if shard is None:
        return True
    k, n = shard
    return int(hashlib.sha256(rel.encode("utf-8")).hexdigest(), 16) % n == k - 1


def corruption(path: Path, full: bool = False) -> tuple[str, str] | None:
    """(failure class, one line) when `path` cannot be a TorchScript archive, else None. The quick
    check reads the zip's directory; `full` also checks every member's CRC (a truncated or damaged
    archive). No code in the archive runs."""
    try:
        with zipfile.ZipFile(path) as zf:
            names = zf.namelist()
            bad = zf.testzip() if full else None
    except zipfile.BadZipFile:
        return "not-a-zip", f"{path}: not a TorchScript archive (not a zip file, or truncated)"
    except (OSError, EOFError, zipfile.LargeZipFile) as exc:
        return "unreadable", f"{path}: cannot read: {exc}"
    except Exception as exc:  # zlib errors and the like from a damaged member
        return "damaged", f"{path}: damaged archive: {type(exc).__name__}: {exc}"
    if bad is not None:
        return "damaged", f"{path}: damaged archive: member {bad} fails its CRC check"
    if not any("/code/" in n or n.startswith("code/") for n in names):
        return "not-torchscript", f"{path}: not TorchScript (a torch.save checkpoint, a .pt2 or another zip)"
    return None
