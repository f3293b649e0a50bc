"""``apply --recording``: a failed proof replayed on the code apply writes.

A recorded proof exports the object as the program made it. Where it failed at code that a fix of
the run rewrites, with the error that fix's rule names (a data-dependent ``if`` that becomes
``torch.cond``), the decision lets the entry point migrate (``Decision.exempted``): the failure
says nothing of the rewritten code. A proof that passed by doing at run time what apply writes (a
scripted child run eager, a named tuple registered, ``is_scripting`` answered as
``is_exporting``) is exempted too. Here the code written is proven. The files of the run, as this run
writes them, are laid out in a scratch copy of the folder the recording was made in; a fresh
interpreter unpickles the proof's object from them (its classes are now the migrated ones), exports
it with the dynamic shapes apply writes, and compares its outputs on the recorded inputs with
TorchScript's (ts2export.record.hooks.replay). A replay that fails there holds the entry point
back with what failed and where; one that cannot start (the object's module does not import in
this interpreter) leaves the decision as it was, and says so.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Sequence

from ts2export.engine.tasks import Run, Task
from ts2export.record.recording import RecordingError, load_recording

SECONDS = 300.0  # time bound of one replay (TS2EXPORT_REPLAY_SECONDS)
_HOOKS = Path(__file__).resolve().parent.parent / "record" / "hooks"
_BOOT = (
    "import importlib.util, os, sys\n"
    "hooks = sys.argv[1]\n"
    "spec = importlib.util.spec_from_file_location('_ts2export_record_hooks', os.path.join(hooks, '__init__.py'),"
    " submodule_search_locations=[hooks])\n"
    "module = importlib.util.module_from_spec(spec)\n"
    "sys.modules[spec.name] = module\n"
    "spec.loader.exec_module(module)\n"
    "from _ts2export_record_hooks import replay\n"
    "sys.exit(replay.main(sys.argv[2:]))\n"
)


def replay_exempted(run: Run, tasks: Sequence[Task], recording_path: str) -> list[dict]:
    """One entry per exempted entry point: {"path", "line", "key", "verdict", "error"?, "reason"?};
    "reason" (why its fixes are held back) where the replay failed on the code written."""
    try:
        recording = load_recording(recording_path)
    except RecordingError:
        return []
    out = []
    with tempfile.TemporaryDirectory(prefix="ts2export-replay-") as tmp:
        shadow = None
        for entry in run.exempted:
            proof = entry.get("proof") or {}
            said = {"path": entry["path"], "line": entry["line"], "key": list(entry["key"])}
            kit = recording.replay_kit(proof["replay"]) if proof.get("replay") else None
            if kit is None:
                out.append({**said, "verdict": "not replayed", "error": "the recording kept no replay of this proof"})
                continue
            if shadow is None:
                base = _base(tasks, Path(recording.cwd))
                shadow = _lay_out(run, tasks, Path(tmp) / "tree", base)
            kit_file = Path(tmp) / f"kit-{len(out)}.pt"
            kit_file.write_bytes(kit)
            verdict = _replay(kit_file, Path(recording.cwd), base, shadow)
            said.update(verdict)
            if verdict["verdict"] == "failed":
                where = ""
                frame = verdict.get("frame")
                if frame:
                    where = f" at {_as_recorded(frame[0], shadow, base)}:{frame[1]}"
                said["reason"] = (f"its recorded proof, run again on the code apply writes, failed{where}: "
                                  f"{verdict.get('error', '')}")
            out.append(said)
    return out


def _base(tasks: Sequence[Task], cwd: Path) -> Path:
    """The folder the run's files are laid out from: the one the recording was made in, or, for a
    recording made in another copy of the tree, the run's common folder."""
    paths = [os.path.abspath(t.path) for t in tasks if t.path.endswith(".py")]
    cwd = Path(os.path.abspath(cwd))
    if any(Path(p).is_relative_to(cwd) for p in paths) or not paths:
        return cwd
    common = Path(os.path.commonpath(paths))
    return common if common.is_dir() else common.parent


def _lay_out(run: Run, tasks: Sequence[Task], shadow: Path, root: Path) -> Path:
    """The run's Python files under ``root`` as this run writes them, at the same places under
    ``shadow``."""
    new = {r.path: r.new for r in run.results if r.changed and r.new is not None}
    root = Path(os.path.abspath(root))
    shadow.mkdir(parents=True, exist_ok=True)
    for t in tasks:
        if not t.path.endswith(".py"):
            continue
        try:
            rel = Path(os.path.abspath(t.path)).relative_to(root)
        except ValueError:
            continue
        data = new.get(t.path)
        if data is None:
            try:
                data = t.data if t.data is not None else Path(t.path).read_bytes()
            except OSError:
                continue
        dest = shadow / rel
        dest.parent.mkdir(parents=True, exist_ok=True)
        dest.write_bytes(data)
    return shadow


def _replay(kit: Path, root: Path, base: Path, shadow: Path) -> dict:
    """``root``: where the recording was made (its import path is moved from there to the copy);
    ``base``: where the copy was laid out from (its other modules import from there)."""
    seconds = float(os.environ.get("TS2EXPORT_REPLAY_SECONDS", SECONDS))
    env = {**os.environ, "TS2EXPORT_PROVE": "0"}
    env.pop("PYTHONPATH", None)  # (the user's modules come from the scratch copy first, then from root)
    where = {"shadow": str(shadow.resolve()), "root": str(root.resolve()), "base": str(base.resolve())}
    try:
        done = subprocess.run([sys.executable, "-c", _BOOT, str(_HOOKS), str(kit), json.dumps(where)],
                              cwd=shadow, env=env, capture_output=True, text=True, timeout=seconds)
    except subprocess.TimeoutExpired:
        return {"verdict": "not replayed", "error": f"the replay took longer than {seconds:g} s"}
    except OSError as exc:
        return {"verdict": "not replayed", "error": f"the replay did not start: {exc}"}
    for line in reversed(done.stdout.splitlines()):
        if line.startswith("{"):
            try:
                return json.loads(line)
            except ValueError:
                break
    tail = [ln for ln in done.stderr.splitlines() if ln.strip()][-1:] or [f"exit {done.returncode}"]
    return {"verdict": "not replayed", "error": f"the replay gave no verdict: {tail[0][:300]}"}


def _as_recorded(file: str, shadow: Path, root: Path) -> str:
    """A file of the scratch copy as the recording's folder names it (relative)."""
    try:
        return Path(file).resolve().relative_to(shadow.resolve()).as_posix()
    except ValueError:
        try:
            return Path(file).resolve().relative_to(Path(root).resolve()).as_posix()
        except ValueError:
            return file
