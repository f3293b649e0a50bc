"""``[tool.ts2export]`` configuration from the nearest ``pyproject.toml``."""

from __future__ import annotations

import os
import re
import sys
from dataclasses import dataclass, field
from pathlib import Path

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover
    import tomli as tomllib


class ConfigError(Exception):
    """A user's configuration is wrong: one clear line, exit 2."""


_KEYS = {"select", "ignore", "exclude", "per-file-ignores", "inputs", "external-readers", "migrate-unfollowable", "baseline",
         "max-file-size", "batch-one", "script-wrappers"}

#: What an example of batch size 1 exports to, when nothing shows other sizes (see docs/callsites.md).
BATCH_ONE = ("dynamic", "static", "hold")


@dataclass
class Config:
    root: Path  # folder that holds the pyproject.toml (or the start folder)
    source: Path | None = None
    select: list[str] = field(default_factory=list)
    ignore: list[str] = field(default_factory=list)
    exclude: list[str] = field(default_factory=list)
    per_file_ignores: dict[str, list[str]] = field(default_factory=dict)
    # Example inputs for call sites that cannot show them: "path/to/file.py::name" -> "(expr, ...)"
    inputs: dict[str, str] = field(default_factory=dict)
    # Rewrite readers of artifacts that no checked file writes (after converting those artifacts).
    external_readers: bool = False
    migrate_unfollowable: bool = False  # an entry point whose target cannot be followed may migrate
    # Functions of other packages that script or trace their first argument (`mylib.jit.compile`):
    # the program model takes their calls for entry points of TorchScript, as `torch.jit.script`.
    script_wrappers: list[str] = field(default_factory=list)
    # An example of batch size 1 with no other size in sight: "dynamic" (doubled, the batch dim
    # dynamic), "static" (exported at batch 1 only), "hold" (left TorchScript, reported).
    batch_one: str = "dynamic"
    # The baseline file `check` and `report` use by default (resolved against the pyproject's folder).
    baseline: Path | None = None
    # Larger Python/C++ files are not parsed (libcst takes about a minute per MB): reported if they
    # mention TorchScript. In megabytes (10**6 bytes).
    max_file_size: float = 2.0


def _str_list(value: object, key: str, source: Path) -> list[str]:
    if isinstance(value, str):
        value = [value]
    if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
        raise ConfigError(f"{source}: [tool.ts2export] {key} must be a list of strings")
    return list(value)


def find_pyproject(start: Path) -> Path | None:
    start = Path(os.path.realpath(start))  # not Path.resolve(): it raises on a symbolic link loop
    for folder in [start, *start.parents] if start.is_dir() else [start.parent, *start.parent.parents]:
        candidate = folder / "pyproject.toml"
        if candidate.is_file():
            try:
                data = tomllib.loads(candidate.read_text(encoding="utf-8"))
            except (tomllib.TOMLDecodeError, UnicodeDecodeError, OSError):
                return candidate  # broken file: load_config reports it
            if "ts2export" in data.get("tool", {}):
                return candidate
    return None


def _project_root(start: Path) -> Path:
    start = Path(os.path.realpath(start))
    folder = start if start.is_dir() else start.parent
    for candidate in [folder, *folder.parents]:
        if (candidate / "pyproject.toml").is_file():
            return candidate
    return Path.cwd().resolve()


def load_config(start: Path, explicit: Path | None = None) -> Config:
    """Config of the nearest pyproject.toml with a [tool.ts2export] table (or ``explicit``)."""
    path = explicit if explicit is not None else find_pyproject(start)
    if path is None:
        # No [tool.ts2export] yet: paths in suggested config entries are relative to the project's
        # pyproject.toml (where the user would add the table), else to the current folder.
        return Config(root=_project_root(start))
    try:
        data = tomllib.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise ConfigError(f"{path}: config file not found") from None
    except (tomllib.TOMLDecodeError, UnicodeDecodeError) as exc:
        raise ConfigError(f"{path}: not valid TOML: {exc}") from None
    table = data.get("tool", {}).get("ts2export", {})
    if not isinstance(table, dict):
        raise ConfigError(f"{path}: [tool.ts2export] must be a table")
    unknown = sorted(set(table) - _KEYS)
    if unknown:
        raise ConfigError(f"{path}: unknown key(s) in [tool.ts2export]: {', '.join(unknown)} (known: {', '.join(sorted(_KEYS))})")
    cfg = Config(root=path.parent.resolve(), source=path)
    for key in ("select", "ignore", "exclude"):
        if key in table:
            setattr(cfg, key, _str_list(table[key], key, path))
    pfi = table.get("per-file-ignores", {})
    if not isinstance(pfi, dict):
        raise ConfigError(f"{path}: [tool.ts2export] per-file-ignores must be a table of glob = [rule ids]")
    cfg.per_file_ignores = {k: _str_list(v, f"per-file-ignores.{k}", path) for k, v in pfi.items()}
    inputs = table.get("inputs", {})
    if not isinstance(inputs, dict) or not all(isinstance(v, str) for v in inputs.values()):
        raise ConfigError(f"{path}: [tool.ts2export] inputs must be a table of \"file.py::name\" = \"(expr, ...)\"")
    cfg.inputs = dict(inputs)
    external = table.get("external-readers", False)
    if not isinstance(external, bool):
        raise ConfigError(f"{path}: [tool.ts2export] external-readers must be true or false")
    cfg.external_readers = external
    unfollowable = table.get("migrate-unfollowable", False)
    if not isinstance(unfollowable, bool):
        raise ConfigError(f"{path}: [tool.ts2export] migrate-unfollowable must be true or false")
    cfg.migrate_unfollowable = unfollowable
    if "script-wrappers" in table:
        wrappers = _str_list(table["script-wrappers"], "script-wrappers", path)
        bad = [w for w in wrappers if not re.fullmatch(r"[A-Za-z_]\w*(\.[A-Za-z_]\w*)+", w)]
        if bad:
            raise ConfigError(f"{path}: [tool.ts2export] script-wrappers must name functions by their dotted path "
                              f"(`mylib.jit.compile`), not {bad[0]!r}")
        cfg.script_wrappers = wrappers
    batch_one = table.get("batch-one", "dynamic")
    if batch_one not in BATCH_ONE:
        raise ConfigError(f"{path}: [tool.ts2export] batch-one must be one of " + ", ".join(f'"{v}"' for v in BATCH_ONE))
    cfg.batch_one = batch_one
    if "baseline" in table:
        if not isinstance(table["baseline"], str) or not table["baseline"].strip():
            raise ConfigError(f"{path}: [tool.ts2export] baseline must be a file name (e.g. \"ts2export-baseline.json\")")
        cfg.baseline = cfg.root / table["baseline"]
    if "max-file-size" in table:
        size = table["max-file-size"]
        if isinstance(size, bool) or not isinstance(size, (int, float)) or size <= 0:
            raise ConfigError(f"{path}: [tool.ts2export] max-file-size must be a positive number of megabytes")
        cfg.max_file_size = float(size)
    return cfg


def _relative(path: Path, cfg: Config) -> str:
    try:
        return Path(os.path.realpath(path)).relative_to(cfg.root).as_posix()
    except ValueError:
        return Path(path).as_posix()


def per_file_ignores(path: Path, cfg: Config) -> tuple[str, ...]:
    """The rule ids ``per-file-ignores`` turns off in ``path``."""
    if not cfg.per_file_ignores:
        return ()
    import pathspec

    rel = _relative(path, cfg)
    out: list[str] = []
    for pattern, ids in cfg.per_file_ignores.items():
        if pathspec.GitIgnoreSpec.from_lines([pattern]).match_file(rel):
            out.extend(ids)
    return tuple(out)


def excluded(path: Path, cfg: Config) -> bool:
    """Whether the config's ``exclude`` patterns cover ``path`` (the file or a folder above it); a
    path outside the config's folder is not excluded."""
    if not cfg.exclude:
        return False
    import pathspec

    try:
        rel = Path(os.path.realpath(path)).relative_to(cfg.root).as_posix()
    except ValueError:
        return False
    return pathspec.GitIgnoreSpec.from_lines(cfg.exclude).match_file(rel)
