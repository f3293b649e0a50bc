"""The corpus harness: proves every rewrite on TorchScript-era programs.

A case is a folder ``corpus/<family>/<case>/`` with

* ``before/`` -- the TorchScript-era program (one or more files; ``main.py`` is the entry point),
* ``after/``  -- the golden: exactly what ``ts2export apply`` makes of ``before/``,
* ``case.toml`` (optional) -- ``description``, ``unsafe_fixes`` (default true), ``select``,
  ``run`` (default: true when ``before/main.py`` exists), ``entry`` (default ``main.py``),
  ``remaining`` (rule ids that ``check`` must still report after ``apply``; default none),
  ``held`` ("path:line:RULE" of every fix that ``apply`` must hold back; default none),
  ``rtol`` / ``atol`` (default: torch.testing's dtype-aware tolerances).

A runnable program is started as ``python main.py OUT`` in a scratch copy of its folder and must
``torch.save`` its outputs (any nesting of tensors and Python values) to ``OUT``. The harness runs
the original and the migrated program and compares their outputs with ``torch.testing``.
"""

from __future__ import annotations

import os
import shlex
import shutil
import sys
import tempfile
import tomllib
from collections import Counter
from dataclasses import dataclass, field, replace
from pathlib import Path

from ts2export.engine.config import Config, load_config
from ts2export.engine.discovery import file_kind
from ts2export.engine.analysis import analyze
from ts2export.engine.tasks import FileResult, Options, Task
from ts2export.harness import sizes
from ts2export.runner import run_python

# The checkout's corpus (migrate/engine/corpus.py -> the checkout), or TS2EXPORT_CORPUS (an
# installed copy of ts2export run against a checkout's tests).
CORPUS = Path(os.environ.get("TS2EXPORT_CORPUS") or Path(__file__).resolve().parents[2] / "corpus")
_CASE_KEYS = {"description", "unsafe_fixes", "select", "run", "entry", "remaining", "held", "rtol", "atol", "timeout",
              "record", "test"}


@dataclass
class Case:
    root: Path
    description: str = ""
    unsafe_fixes: bool = True
    select: tuple[str, ...] = ()
    run: bool = False
    entry: str = "main.py"
    remaining: tuple[str, ...] = ()
    held: tuple[str, ...] = ()  # "path:line:RULE" of the fixes apply must hold back
    record: bool = False  # migrate with a recording of the program (`ts2export record`, then --recording)
    test: str | None = None  # migrate with `apply --test CMD` ({python}: this interpreter), in a scratch copy
    rtol: float | None = None
    atol: float | None = None
    timeout: float = 600

    @property
    def name(self) -> str:
        return f"{self.root.parent.name}/{self.root.name}"

    @property
    def before(self) -> Path:
        return self.root / "before"

    @property
    def after(self) -> Path:
        return self.root / "after"


def load_case(folder: Path) -> Case:
    meta: dict = {}
    toml = folder / "case.toml"
    if toml.is_file():
        meta = tomllib.loads(toml.read_text(encoding="utf-8"))
        unknown = set(meta) - _CASE_KEYS
        if unknown:
            raise ValueError(f"{toml}: unknown keys {sorted(unknown)}")
    case = Case(root=folder)
    case.description = meta.get("description", "")
    case.unsafe_fixes = bool(meta.get("unsafe_fixes", True))
    case.select = tuple(meta.get("select", ()))
    case.entry = meta.get("entry", "main.py")
    case.run = bool(meta.get("run", (folder / "before" / case.entry).is_file()))
    case.remaining = tuple(meta.get("remaining", ()))
    case.held = tuple(meta.get("held", ()))
    case.record = bool(meta.get("record", False))
    case.test = meta.get("test")
    case.rtol, case.atol = meta.get("rtol"), meta.get("atol")
    case.timeout = float(meta.get("timeout", 600))
    return case


def all_cases(corpus: Path = CORPUS) -> list[Case]:
    return [load_case(p.parent) for p in sorted(corpus.glob("*/*/before"))]


def source_files(tree: Path) -> list[Path]:
    return sorted(p for p in tree.rglob("*") if p.is_file() and "__pycache__" not in p.parts)


@dataclass
class Migration:
    files: dict[str, bytes] = field(default_factory=dict)  # relative path -> migrated bytes
    remaining: Counter = field(default_factory=Counter)  # rule id -> findings left
    held: dict[str, str] = field(default_factory=dict)  # "path:line:RULE" -> why apply held it back
    errors: list[str] = field(default_factory=list)
    second_pass_changes: list[str] = field(default_factory=list)
    kept: list[str] = field(default_factory=list)  # units `apply --test` kept
    rolled_back: dict[str, str] = field(default_factory=dict)  # units it rolled back, with the failing tests


PROGRAM_ENV = {"PYTHONHASHSEED": "0", "PYTHONDONTWRITEBYTECODE": "1", "OMP_NUM_THREADS": "1"}
QUIET = ("ignore::DeprecationWarning",)  # TorchScript's deprecation warnings, as `python -W` takes them


def _scratch(tree: Path, into: Path, extra_files: dict[str, bytes] | None) -> Path:
    """A scratch copy of ``tree`` in ``into``/prog, overlaid with ``extra_files``."""
    work = into / "prog"
    shutil.copytree(tree, work, ignore=shutil.ignore_patterns("__pycache__"))
    for rel, data in (extra_files or {}).items():
        (work / rel).parent.mkdir(parents=True, exist_ok=True)
        (work / rel).write_bytes(data)
    return work


def record_program(case: Case, into: Path, extra_files: dict[str, bytes] | None = None) -> Path:
    """Run the case's program (optionally overlaid with ``extra_files``, a variant) under `ts2export
    record` in a scratch copy; the recording's path. The program runs in the warm runner
    (``ts2export.runner``): recorded as `ts2export record -- python main.py OUT` records it, by the
    bootstrap on its PYTHONPATH, with the proof at its exit."""
    from ts2export.record.run import record

    work = _scratch(case.before, into, extra_files)
    recording = into / "ts2export-recording.json"
    env = dict(os.environ, **PROGRAM_ENV)
    log: list[str] = []

    def launch(command: list[str], run_env: dict[str, str], cwd: str) -> int:
        done = run_python(command[1:], cwd, run_env, case.timeout, QUIET)
        log.append(done.stdout + done.stderr)
        return done.returncode

    result = record([sys.executable, case.entry, str(into / "outputs.pt")], recording, cwd=work, env=env, launch=launch)
    if result.exit_code != 0 or not recording.is_file():
        raise RuntimeError(f"recording {case.name} failed ({result.exit_code}):\n{''.join(log)[-4000:]}")
    return recording


def case_options(case: Case, fix: str | None, recording: Path | None = None) -> Options:
    own = case.before / "pyproject.toml"  # a case may carry its own [tool.ts2export] (inputs, ...)
    cfg = load_config(case.before, own) if own.is_file() else Config(root=case.before)
    rule_options = {"inputs": dict(cfg.inputs), "root": str(case.before), "batch_one": cfg.batch_one}
    return Options(select=case.select or tuple(cfg.select), ignore=tuple(cfg.ignore), fix=fix,
                   rule_options=rule_options, plan="unsafe" if case.unsafe_fixes else "safe",
                   external_readers=cfg.external_readers, recording=str(recording) if recording else None,
                   migrate_unfollowable=cfg.migrate_unfollowable, script_wrappers=tuple(cfg.script_wrappers))


def run_tree(files: dict[str, bytes], options: Options) -> list[FileResult]:
    """What the engine makes of an in-memory tree (relative path -> bytes), as `apply` would."""
    tasks = [Task(rel, kind, data=data) for rel, data in sorted(files.items()) if (kind := file_kind(Path(rel)))]
    return analyze(tasks, options, jobs=1).results


def migrate_files(files: dict[str, bytes], options: Options) -> Migration:
    """Apply ``options`` to an in-memory tree; what is left, and whether a second apply changes more."""
    out = Migration()
    results = {r.path: r for r in run_tree(files, options)}
    for rel, data in files.items():
        r = results.get(rel)
        if r is not None:
            if r.error:
                out.errors.append(f"{rel}: {r.error}")
            out.errors.extend(r.notes)
            out.held.update({f"{f.path}:{f.line}:{f.rule_id}": f.held for f in r.findings if f.held})
        out.files[rel] = r.new if r is not None and r.changed else data
    out.second_pass_changes = [r.path for r in run_tree(out.files, options) if r.changed]
    for r in run_tree(out.files, replace(options, fix=None)):
        out.remaining.update(f.rule_id for f in r.findings)
    return out


def migrate_tree(case: Case) -> Migration:
    """What ``apply`` makes of ``before/`` (in memory), what is left, and whether it is idempotent
    (a ``record`` case is first run under ``ts2export record``, and migrated with the recording)."""
    files = {p.relative_to(case.before).as_posix(): p.read_bytes() for p in source_files(case.before)}
    mode = "unsafe" if case.unsafe_fixes else "safe"
    if case.test:
        return gated_tree(case, files, mode)
    if not case.record:
        return migrate_files(files, case_options(case, mode))
    with tempfile.TemporaryDirectory(prefix="ts2export-record-") as tmp:
        return migrate_files(files, case_options(case, mode, record_program(case, Path(tmp))))


def gated_tree(case: Case, files: dict[str, bytes], mode: str) -> Migration:
    """``apply --test`` on a scratch copy of ``before/``: what it keeps, what is left and held back."""
    from ts2export.engine.gated import gated_apply

    out = Migration()
    with tempfile.TemporaryDirectory(prefix="ts2export-gated-") as tmp:
        work = Path(tmp) / "prog"
        shutil.copytree(case.before, work, ignore=shutil.ignore_patterns("__pycache__"))
        tasks = [Task(str(work / rel), kind) for rel in sorted(files) if (kind := file_kind(Path(rel)))]
        command = case.test.format(python=sys.executable)
        outcome = gated_apply(tasks, case_options(case, mode), command, work, jobs=1, timeout=case.timeout,
                              launch=warm_shell)
        for rel in files:
            out.files[rel] = (work / rel).read_bytes()
        for r in outcome.results:
            rel = Path(r.path).relative_to(work).as_posix()
            if r.error:
                out.errors.append(f"{rel}: {r.error}")
            out.held.update({f"{rel}:{f.line}:{f.rule_id}": f.held for f in r.findings if f.held})
        out.kept, out.rolled_back = outcome.kept, outcome.rolled_back
    for r in run_tree(out.files, replace(case_options(case, None), plan=mode)):
        out.remaining.update(f.rule_id for f in r.findings)
    return out


def warm_shell(command: str, cwd: Path, timeout: float | None) -> tuple[int, str]:
    """A test command as the shell runs it; ``PYTHON ARGS`` (this interpreter) in the warm runner."""
    from ts2export.engine.gated import shell

    argv = shlex.split(command)
    plain = len(argv) > 1 and argv[0] == sys.executable and (argv[1] in ("-m", "-c") or not argv[1].startswith("-"))
    if not plain or any(c in command for c in "|&;<>$`"):
        return shell(command, cwd, timeout)
    done = run_python(argv[1:], cwd, dict(os.environ), timeout)
    return done.returncode, done.stdout + done.stderr


#: A folder where run_program keeps each program's outputs, keyed by the program's bytes (the test
#: suite sets it for its session: a program that ran before is not run again by another test).
OUTPUTS_CACHE_ENV = "TS2EXPORT_HARNESS_OUTPUTS"


def _program_key(tree: Path, entry: str, extra_files: dict[str, bytes] | None) -> str:
    import hashlib

    files = {p.relative_to(tree).as_posix(): p.read_bytes() for p in source_files(tree)}
    files.update(extra_files or {})
    digest = hashlib.sha256(entry.encode() + b"\0")
    for rel in sorted(files):
        digest.update(rel.encode() + b"\0" + hashlib.sha256(files[rel]).digest())
    return digest.hexdigest()


def run_program(tree: Path, entry: str, timeout: float, extra_files: dict[str, bytes] | None = None,
                probe_sizes: bool = False) -> tuple[object, str]:
    """Run ``entry`` in a scratch copy of ``tree`` (optionally overlaid); return (outputs, log).
    It runs in the warm runner (``ts2export.runner``): as ``python entry OUT`` would, without
    paying for a new interpreter and torch's import. With ``TS2EXPORT_HARNESS_OUTPUTS`` set, a
    program whose files and entry were run before (the corpus programs are seeded: the same bytes
    compute the same outputs) gives the outputs it wrote then. With ``probe_sizes``, every program
    it exports is also called at other sizes where its export call asked for dynamic dimensions
    (:mod:`.sizes`): one that refuses inputs the module takes is a break (RuntimeError)."""
    import torch

    cache = os.environ.get(OUTPUTS_CACHE_ENV)
    key = _program_key(tree, entry, extra_files) + ("-sizes" if probe_sizes else "")
    kept = Path(cache) / f"{key}.pt" if cache else None
    if kept is not None and kept.is_file():
        return torch.load(kept, weights_only=False), "(outputs of an earlier run of the same program)"
    with tempfile.TemporaryDirectory(prefix="ts2export-case-") as tmp:
        work = _scratch(tree, Path(tmp), extra_files)
        out_file = Path(tmp) / "outputs.pt"
        env = dict(os.environ, **PROGRAM_ENV)
        report = Path(tmp) / "sizes.jsonl"
        if probe_sizes:
            site = sizes.write_site(Path(tmp) / "probe-site")
            env["PYTHONPATH"] = os.pathsep.join(p for p in (site, env.get("PYTHONPATH", "")) if p)
            env[sizes.ENV] = str(report)
        done = run_python([entry, str(out_file)], work, env, timeout, QUIET)
        log = done.stdout + done.stderr
        if done.returncode != 0:
            raise RuntimeError(f"{entry} exited {done.returncode}:\n{log[-4000:]}")
        if not out_file.is_file():
            raise RuntimeError(f"{entry} wrote no outputs to argv[1]")
        refused = sizes.read_report(report)
        if refused:
            raise RuntimeError("an exported program refuses sizes its module takes (the size probe): " + "; ".join(
                f"input {r['input']} dim {r['dim']} at {r['size']} (example {r['example']}): {r['error']}" for r in refused[:4]))
        outputs = torch.load(out_file, weights_only=False)
        if kept is not None:
            kept.parent.mkdir(parents=True, exist_ok=True)
            part = kept.with_name(f"{kept.name}.{os.getpid()}")
            shutil.copyfile(out_file, part)
            os.replace(part, kept)  # whole or absent, also with two workers at it
        return outputs, log


def import_program(path: Path, name: str):
    """Import a corpus program file as module ``name`` (registered in sys.modules: TorchScript reads
    the source of the module's classes), quietly as to TorchScript's deprecation warnings."""
    import importlib.util
    import warnings

    spec = importlib.util.spec_from_file_location(name, path)
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DeprecationWarning)
        spec.loader.exec_module(module)
    return module


def compare_outputs(expected: object, actual: object, case: Case) -> None:
    """Same structure, tensors equal within tolerance (torch.testing), other leaves equal."""
    import torch
    from torch.utils import _pytree as pytree

    exp_leaves, exp_spec = pytree.tree_flatten(expected)
    act_leaves, act_spec = pytree.tree_flatten(actual)
    if exp_spec != act_spec:
        raise AssertionError(f"output structure differs:\n  before: {exp_spec}\n  after:  {act_spec}")
    kwargs = {}
    if case.rtol is not None or case.atol is not None:
        kwargs = {"rtol": case.rtol or 0.0, "atol": case.atol or 0.0}
    for i, (e, a) in enumerate(zip(exp_leaves, act_leaves)):
        if isinstance(e, torch.Tensor) or isinstance(a, torch.Tensor):
            torch.testing.assert_close(a, e, msg=lambda m, i=i: f"output leaf {i}: {m}", **kwargs)
        elif isinstance(e, float) and isinstance(a, float):
            torch.testing.assert_close(a, e, **kwargs)
        elif e != a:
            raise AssertionError(f"output leaf {i} differs: before {e!r}, after {a!r}")
