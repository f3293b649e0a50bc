"""One artifact of a model store migrated: the single-file pipeline (`pipeline.migrate_artifact`)
run on it, and its report turned into the store report's record.

A task is plain data (JSON), so that a subprocess worker or a Ray task can run it:
``{"path", "out_dir", "specs", "inputs_file", "options"}``. `run_task` never raises for a
problem of the artifact: it returns a record with a status (``migrated``, ``mismatch``, ``failed``,
``corrupt``), a failure class, the error's first line, per-step timings, file sizes and the largest
absolute error verify saw.
"""

from __future__ import annotations

import contextlib
import logging
import re
import time
import warnings
from collections.abc import Iterator
from pathlib import Path
from typing import Any

# (failure class, pattern in the error line), the first match wins; else the step's name.
FAILURE_CLASSES = [
    ("load", r"cannot load TorchScript|not a TorchScript archive|not TorchScript"),
    ("device-missing", r"this machine does not have|is not present|no such device"),
    ("data-dependent", r"[Dd]ata-dependent|GuardOnDataDependent|branches or loops on tensor values"),
    ("unsupported-construct", r"node \w+::\w+ not supported|a loop whose trip count|an Optional input|torch\.jit\.fork|"
                              r"TorchScript class|a raise statement|optimize_for_inference"),
    ("bad-inputs", r"does not fit|got \d+ input|input\(s\)|holds a|expects? .*dtype|dtype .* expected|out of range"),
    ("missing-dependency", r"needs executorch|pip install|no C\+\+ compiler"),
]
_STEP_CLASS = {"convert": "convert", "verify .pt2": "verify", "package": "package", "verify package": "verify",
               "lower": "lower", "verify .pte": "verify"}


@contextlib.contextmanager
def quiet() -> Iterator[None]:
    """Library warnings and log records off, native writes to stderr silenced (fsutil)."""
    from ts2export.artifact import fsutil

    fsutil.QUIET_NATIVE_STDERR = True
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        previous = logging.root.manager.disable
        logging.disable(logging.CRITICAL)
        try:
            yield
        finally:
            logging.disable(previous)


def classify(step: str, message: str) -> str:
    """`convert:data-dependent`, `lower:missing-dependency`, `verify:bad-inputs`, `convert:other`, ..."""
    base = _STEP_CLASS.get(step, step or "run")
    for name, pattern in FAILURE_CLASSES:
        if re.search(pattern, message):
            return f"{base}:{name}"
    return f"{base}:other"


def _size(path: Path) -> int | None:
    return path.stat().st_size if path.is_file() else None


def _max_abs(report: dict[str, Any]) -> float | None:
    values = []
    for key in ("verify_pt2", "verify_package", "verify_pte"):
        rows = (report.get(key) or {}).get("rows") or []
        values += [r["max_abs"] for r in rows if r.get("max_abs") is not None]
    return max(values) if values else None


def run_task(task: dict[str, Any]) -> dict[str, Any]:
    """Migrate one artifact (see the module docstring); the returned record is JSON-able."""
    from ts2export.artifact.errors import ArtifactError, one_line
    from ts2export.artifact.store import corruption

    src = Path(task["path"])
    out = Path(task["out_dir"])
    opts = task["options"]
    t0 = time.perf_counter()
    record: dict[str, Any] = {"status": "failed", "failure_class": None, "error": None, "timings": {},
                              "sizes": {"old": _size(src)}, "max_abs_error": None, "steps": []}
    bad = corruption(src, full=True)
    if bad is not None:
        record.update(status="corrupt", failure_class=bad[0], error=bad[1])
        return record
    with quiet():
        from ts2export.artifact.pipeline import migrate_artifact

        try:
            rep = migrate_artifact(
                str(src), str(out), task.get("specs") or (), task.get("inputs_file"), opts.get("method") or (),
                opts.get("backend", "xnnpack"), opts.get("device", "auto"), opts.get("samples", 3), opts.get("seed", 0),
                opts.get("reference"), opts.get("rtol"), opts.get("atol"), opts.get("lower", True),
                opts.get("to_device"), opts.get("package", False),
            )
        except ArtifactError as exc:
            record.update(failure_class=classify("run", str(exc)), error=str(exc))
            record["timings"]["total"] = time.perf_counter() - t0
            return record
        except Exception as exc:  # a failure the pipeline does not wrap: still one record, never a crash
            record.update(failure_class="run:internal", error=f"{type(exc).__name__}: {one_line(exc)}")
            record["timings"]["total"] = time.perf_counter() - t0
            return record
    data = rep.to_dict()
    stem = src.stem
    record["steps"] = [f"{s['step']}: {s['result']}" for s in rep.steps]
    record["timings"] = {s["step"]: s["seconds"] for s in rep.steps}
    record["timings"]["total"] = time.perf_counter() - t0
    record["sizes"].update(pt2=_size(out / f"{stem}.pt2"), pte=_size(out / f"{stem}.pte"),
                           package=_size(out / f"{stem}_aoti.pt2"))
    record["max_abs_error"] = _max_abs(data)
    record["device"] = (data.get("convert") or {}).get("device")
    if rep.error:
        failed = next((s for s in rep.steps if s["result"] == "error"), {"step": "run", "detail": rep.error})
        cls = classify(failed["step"], rep.error)
        status = "corrupt" if cls == "convert:load" else "failed"
        record.update(status=status, failure_class=cls, error=one_line(Exception(rep.error)))
    elif data["status"] == "mismatch":
        steps = [s["step"] for s in rep.steps if s["result"] == "mismatch"]
        record.update(status="mismatch", failure_class="mismatch:" + ",".join(steps),
                      error=f"outputs differ in {', '.join(steps)}")
    else:
        record["status"] = "migrated"
    return record
