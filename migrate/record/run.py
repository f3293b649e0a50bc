"""`ts2export record -- CMD ...`: run a command with the TorchScript entry points recorded.

The command runs as a child process with its standard streams untouched. A temporary folder holds
a bootstrap `sitecustomize.py` (first on the child's PYTHONPATH, so every Python process the command
starts, forked or spawned, loads the recorder; it then runs the `sitecustomize` it shadows) and the
shards the processes write. When the command ends, however it ends, the shards are merged into
one recording (JSON) and an archive of sample inputs next to it (NAME.samples.zip: one torch.save'd
`(args, kwargs)` per sample; merging them needs no torch, so the recorder adds no torch import). SIGTERM, SIGHUP and SIGQUIT are forwarded to
the child; SIGINT too, unless the terminal already delivered it to the child's process group.
"""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable

from ts2export.record import merge as record_merge

SHARD_ENV = "TS2EXPORT_RECORD_DIR"
SAMPLES_ENV = "TS2EXPORT_RECORD_SAMPLES"
PROVE_ENV = "TS2EXPORT_PROVE"  # "0": no proof at exit (see ts2export.record.hooks.prove)
PROVE_SECONDS_ENV = "TS2EXPORT_PROVE_SECONDS"
PROVE_SECONDS = 120.0
DEFAULT_OUTPUT = "ts2export-recording.json"

BOOTSTRAP = '''\
# Written by `ts2export record`: load the recorder, then the sitecustomize this file shadows.
import os as _os
import sys as _sys


def _ts2export_record_boot():
    here = _os.path.dirname(_os.path.abspath(__file__))
    try:
        _sys.path[:] = [p for p in _sys.path if _os.path.abspath(p or ".") != here]
    except Exception:
        pass
    shard_dir = _os.environ.get({shard_env!r})
    if shard_dir and _os.path.isdir(shard_dir):
        try:
            import importlib.util

            spec = importlib.util.spec_from_file_location("_ts2export_record_hooks", {hooks!r},
                                                          submodule_search_locations=[_os.path.dirname({hooks!r})])
            module = importlib.util.module_from_spec(spec)
            _sys.modules[spec.name] = module
            spec.loader.exec_module(module)
            module.install(shard_dir)
        except Exception:
            for name in [n for n in _sys.modules if n.split(".")[0] == "_ts2export_record_hooks"]:
                _sys.modules.pop(name, None)
    import importlib.machinery
    import importlib.util

    spec = importlib.machinery.PathFinder.find_spec("sitecustomize", [p for p in _sys.path])
    if spec is not None and spec.loader is not None and _os.path.abspath(spec.origin or "") != _os.path.abspath(__file__):
        module = importlib.util.module_from_spec(spec)
        _sys.modules["sitecustomize"] = module
        spec.loader.exec_module(module)


_ts2export_record_boot()
del _ts2export_record_boot
'''


class RecordError(Exception):
    """A user error: one line, exit 2."""


@dataclass
class RecordResult:
    exit_code: int  # what `ts2export record` exits with: the command's own code
    output: Path
    samples: Path | None
    sites: int
    calls: int
    processes: int
    seconds: float
    proofs: dict[str, int] = field(default_factory=dict)  # verdict -> call sites


def _exit_code(returncode: int) -> int:
    """The child's exit status as a shell reports it (128 + N when killed by signal N)."""
    return 128 - returncode if returncode < 0 else returncode


def _terminal_delivered_sigint() -> bool:
    """True when Ctrl-C at a terminal reached the child too (same foreground process group)."""
    for fd in (0, 1, 2):
        try:
            if os.isatty(fd):
                return os.tcgetpgrp(fd) == os.getpgrp()
        except OSError:
            continue
    return False


def check_output(output: Path) -> None:
    parent = output.parent if str(output.parent) else Path(".")
    if not parent.is_dir():
        raise RecordError(f"{output}: the folder {parent} does not exist")
    if output.is_dir():
        raise RecordError(f"{output}: is a folder")
    if not os.access(parent, os.W_OK):
        raise RecordError(f"{output}: cannot write in {parent}")


def record(command: list[str], output: Path, samples_per_method: int = record_merge.SAMPLES_PER_METHOD,
           sample_bytes: int = record_merge.SAMPLE_FILE_BYTES, prove: bool = True,
           prove_seconds: float = PROVE_SECONDS, cwd: Path | None = None, env: dict[str, str] | None = None,
           launch: Callable[[list[str], dict[str, str], str], int] | None = None) -> RecordResult:
    """Run `command` recorded; write the recording to `output`. Raises RecordError on user errors
    (the command cannot start, the output cannot be written). `prove`: when each process ends,
    export what it scripted or traced and compare (at most `prove_seconds` per call site). `cwd`:
    where the command runs (default: here); `env`: its environment, before the recorder's
    variables (default: this process's). `launch(command, env, cwd)`: how to run it and get its
    return code (default: a child process with this process's standard streams)."""
    if not command:
        raise RecordError("no command to record: ts2export record -- CMD [ARGS]...")
    output = Path(output)
    check_output(output)
    work = Path(tempfile.mkdtemp(prefix="ts2export-record-"))
    try:
        boot = work / "boot"
        shards = work / "shards"
        boot.mkdir()
        shards.mkdir()
        hooks = (Path(__file__).parent / "hooks" / "__init__.py").resolve()  # a package loaded by path
        (boot / "sitecustomize.py").write_text(BOOTSTRAP.format(shard_env=SHARD_ENV, hooks=str(hooks)), encoding="utf-8")
        env = dict(os.environ if env is None else env)
        env["PYTHONPATH"] = str(boot) + (os.pathsep + env["PYTHONPATH"] if env.get("PYTHONPATH") else "")
        env[SHARD_ENV] = str(shards)
        env[SAMPLES_ENV] = str(max(0, samples_per_method))
        env[PROVE_ENV] = "1" if prove else "0"
        env[PROVE_SECONDS_ENV] = repr(float(prove_seconds))
        cwd = str(Path(cwd).resolve()) if cwd is not None else os.getcwd()
        started = time.monotonic()
        returncode = (launch or _run)(command, env, cwd)
        seconds = time.monotonic() - started
        return _write(shards, output, command, cwd, _exit_code(returncode), seconds, samples_per_method, sample_bytes)
    finally:
        shutil.rmtree(work, ignore_errors=True)


def _run(command: list[str], env: dict[str, str], cwd: str) -> int:
    try:
        proc = subprocess.Popen(command, env=env, cwd=cwd)
    except FileNotFoundError:
        raise RecordError(f"cannot run {command[0]!r}: command not found") from None
    except PermissionError:
        raise RecordError(f"cannot run {command[0]!r}: permission denied") from None
    except OSError as exc:
        raise RecordError(f"cannot run {command[0]!r}: {exc.strerror or exc}") from None

    def forward(signum, _frame):
        if signum == signal.SIGINT and _terminal_delivered_sigint():
            return
        try:
            proc.send_signal(signum)
        except ProcessLookupError:
            pass

    previous = {}
    for name in ("SIGINT", "SIGTERM", "SIGHUP", "SIGQUIT"):
        sig = getattr(signal, name, None)
        if sig is not None:
            try:
                previous[sig] = signal.signal(sig, forward)
            except (ValueError, OSError):  # not the main thread
                pass
    try:
        while True:
            try:
                return proc.wait()
            except KeyboardInterrupt:  # a handler that is not ours raised: keep waiting for the child
                continue
    finally:
        for sig, handler in previous.items():
            signal.signal(sig, handler)


def _write(shards: Path, output: Path, command, cwd, exit_code, seconds, samples_per_method, sample_bytes) -> RecordResult:
    """Merge the shards; write the recording and its samples archive (neither needs torch here)."""
    import io
    import zipfile

    from ts2export.textio import atomic_write_bytes

    recording, candidates = record_merge.merge_shards(record_merge.read_shards(shards), cwd)
    chosen = record_merge.pick_samples(candidates, samples_per_method, sample_bytes) if samples_per_method > 0 else []
    side = record_merge.samples_path(output)
    by_site = {s["id"]: s for s in recording["sites"]}
    counters: dict[tuple, int] = {}
    archive = io.BytesIO()
    kept = 0
    with zipfile.ZipFile(archive, "w", zipfile.ZIP_STORED) as zf:
        for c in chosen:
            try:  # a process killed while writing a sample leaves none (samples are renamed into place)
                data = (shards / c["file"]).read_bytes()
            except OSError:
                continue
            n = counters[(c["site"], c["method"])] = counters.get((c["site"], c["method"]), 0) + 1
            key = f"{c['site']}/{c['method']}/{n - 1}"
            zf.writestr(key + ".pt", data)
            by_site[c["site"]]["methods"][c["method"]]["samples"].append(
                {"key": key, "variant": c["variant"], "shapes": c["shapes"], "bytes": c["bytes"]}
            )
            kept += 1
        for site in recording["sites"]:  # the replay kits of failed proofs (see hooks/replay.py)
            proof = site.get("proof") or {}
            kit = proof.pop("replay", None)
            if kit is None:
                continue
            try:
                data = (shards / kit).read_bytes()
            except OSError:
                continue
            proof["replay"] = f"replay/{site['id']}.pt"
            zf.writestr(proof["replay"], data)
            kept += 1
    recording = {
        **{k: recording[k] for k in ("format", "version")},
        "command": list(command),
        "exit_code": exit_code,
        "seconds": round(seconds, 3),
        "python": sys.version.split()[0],
        **{k: v for k, v in recording.items() if k not in ("format", "version")},
        "samples_file": side.name if kept else None,
    }
    try:
        if kept:
            atomic_write_bytes(side, archive.getvalue())
        elif side.exists():
            side.unlink()
        atomic_write_bytes(output, (record_merge.dumps(recording) + "\n").encode("utf-8"))
    except OSError as exc:
        raise RecordError(f"{output}: cannot write the recording: {exc.strerror or exc}") from None
    calls = sum(m["calls"] for s in recording["sites"] for m in s["methods"].values())
    proofs: dict[str, int] = {}
    for s in recording["sites"]:
        if s.get("proof"):
            proofs[s["proof"]["verdict"]] = proofs.get(s["proof"]["verdict"], 0) + 1
    return RecordResult(exit_code, output, side if kept else None, len(recording["sites"]), calls, recording["processes"],
                        seconds, proofs)
