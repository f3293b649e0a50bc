#!/usr/bin/env python3
"""Snapshot what ts2export prints and writes, to compare two versions of it byte for byte.

A change meant to leave behaviour as it was (a restructuring, a cache, a faster path) is checked by
running this once with the old code and once with the new, then ``diff -r OLD NEW``. It writes,
under ``OUT/``, one file per command with its exit code, standard output and standard error:

* every corpus case (``corpus/<family>/<case>/before``, in a scratch copy): ``scan --format json``
  and ``diff`` in both fix modes, the text ``scan``, and ``report --format markdown``;
* each ``--tree PATH`` (a real repository): ``scan --format json`` and ``diff --unsafe-fixes``;
* a recording: ``record`` of ``corpus/recorded/served_sizes`` (the recording's inputs, without its
  times), then ``scan`` and ``diff --unsafe-fixes`` with it;
* a gated apply: ``apply --unsafe-fixes --test`` on ``corpus/gated/broken_unit`` and the files it
  leaves;
* the artifact commands on the corpus models (``--artifacts``): ``convert``, ``verify --format
  json`` and ``migrate-artifact`` (report.json), with times and scratch paths masked.

The ts2export that runs is ``PYTHON -m ts2export`` (``--python``, default this interpreter), with
the environment as given: point ``PYTHONPATH`` at another build to snapshot it.

    python scripts/snapshot_outputs.py OUT [--tree ../timm] [--artifacts] [--python PY] [--only CASE]
"""

from __future__ import annotations

import argparse
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
CORPUS = ROOT / "corpus"


class Snapshot:
    def __init__(self, out: Path, python: str) -> None:
        self.out = out
        self.python = python
        self.env = {**os.environ, "TS2EXPORT_NO_CACHE": "1", "COLUMNS": "120", "NO_COLOR": "1"}

    def run(self, name: str, args: list[str], cwd: Path, mask: list[str] = (), timeout: float = 3600) -> subprocess.CompletedProcess:
        """Run ``ts2export ARGS`` in ``cwd`` and write its code and output to OUT/NAME."""
        proc = subprocess.run([self.python, "-m", "ts2export", *args], cwd=cwd, env=self.env, capture_output=True,
                              text=True, timeout=timeout)
        self.write(name, f"rc: {proc.returncode}\n--- stdout\n{proc.stdout}--- stderr\n{proc.stderr}", [str(cwd), *mask])
        return proc

    def write(self, name: str, text: str, mask: list[str] = ()) -> None:
        for m in mask:
            text = text.replace(m, "<scratch>")
        path = self.out / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text, encoding="utf-8")


def cases() -> list[Path]:
    return sorted(p.parent for p in CORPUS.glob("*/*/before"))


def snapshot_case(snap: Snapshot, case: Path, scratch: Path) -> None:
    name = f"corpus/{case.parent.name}/{case.name}"
    work = scratch / name
    shutil.copytree(case / "before", work)
    snap.run(f"{name}/scan.txt", ["scan", "."], work)
    snap.run(f"{name}/scan.json", ["scan", "--format", "json", "."], work)
    snap.run(f"{name}/scan-unsafe.json", ["scan", "--unsafe-fixes", "--format", "json", "."], work)
    snap.run(f"{name}/diff.txt", ["diff", "."], work)
    snap.run(f"{name}/diff-unsafe.txt", ["diff", "--unsafe-fixes", "."], work)
    snap.run(f"{name}/report.md", ["report", "--format", "markdown", "."], work)


def snapshot_tree(snap: Snapshot, tree: Path) -> None:
    name = f"tree/{tree.name}"
    snap.run(f"{name}/scan.json", ["scan", "--format", "json", "."], tree)
    snap.run(f"{name}/diff-unsafe.txt", ["diff", "--unsafe-fixes", "."], tree)


def snapshot_recording(snap: Snapshot, scratch: Path) -> None:
    work = scratch / "recorded"
    shutil.copytree(CORPUS / "recorded" / "served_sizes" / "before", work)
    snap.run("recorded/record.txt", ["record", "-o", "rec.json", "--", sys.executable, "main.py", "out.pt"], work)
    data = json.loads((work / "rec.json").read_text())
    snap.write("recorded/recording.json", json.dumps(_without_times(data), indent=1, sort_keys=True), [str(work)])
    snap.run("recorded/scan.json", ["scan", "--format", "json", "--recording", "rec.json", "."], work)
    snap.run("recorded/diff-unsafe.txt", ["diff", "--unsafe-fixes", "--recording", "rec.json", "."], work)


def _without_times(value):
    if isinstance(value, dict):
        return {k: _without_times(v) for k, v in value.items()
                if not any(w in k.lower() for w in ("time", "seconds", "started", "pid", "host", "created", "python"))}
    if isinstance(value, list):
        return [_without_times(v) for v in value]
    return value


def snapshot_gated(snap: Snapshot, scratch: Path) -> None:
    work = scratch / "gated"
    shutil.copytree(CORPUS / "gated" / "broken_unit" / "before", work)
    test = f"{sys.executable} -m pytest -q -p no:cacheprovider tests"
    snap.run("gated/apply.txt", ["apply", "--unsafe-fixes", "--test", test, "."], work, mask=[sys.executable])
    text = (snap.out / "gated/apply.txt").read_text(encoding="utf-8")
    snap.write("gated/apply.txt", re.sub(r"\(\d+\.\d+ s\)", "(<t> s)", text))
    for path in sorted(work.rglob("*.py")):
        rel = path.relative_to(work)
        if "__pycache__" not in rel.parts:
            snap.write(f"gated/after/{rel}", path.read_text(encoding="utf-8"))


ARTIFACT_MODELS = ["small_cnn", "multi_input_mlp", "dict_tuple_outputs", "embedding_bag", "branchy", "multi_method",
                   "loop_accumulate", "mixed_dtypes"]
_TIMES = re.compile(r'("(?:seconds|[a-z_]*_s|[a-z_]*ms|latency[a-z_]*)": )-?[0-9.e+-]+|(\| )[0-9]+\.[0-9]{2}( \|)')


def snapshot_artifacts(snap: Snapshot, scratch: Path) -> None:
    import importlib.util
    import warnings

    import torch

    work = scratch / "artifacts"
    work.mkdir()
    for name in ARTIFACT_MODELS:
        spec = importlib.util.spec_from_file_location(f"corpus_models_{name}", CORPUS / "models" / f"{name}.py")
        module = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(module)
        model, example, specs = module.build()
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            ts = torch.jit.script(model) if module.LEGACY == "script" else torch.jit.trace(model, example)
        ts.save(str(work / f"{name}.pt"))
        inputs = [a for s in specs for a in ("--input", s)]
        if name == "multi_method":
            inputs += ["--input", f"encode:{specs[0]}"]
        mask = lambda text: _TIMES.sub(lambda m: (m.group(1) or m.group(2)) + "<t>" + (m.group(3) or ""), text)
        for verb, args in (("convert", ["convert", f"{name}.pt", "-o", f"{name}.pt2", *inputs]),
                           ("verify", ["verify", f"{name}.pt", f"{name}.pt2", "--format", "json", *inputs]),
                           ("migrate-artifact", ["migrate-artifact", f"{name}.pt", "--out", f"{name}_out", "--no-lower", *inputs])):
            proc = snap.run(f"artifacts/{name}/{verb}.txt", args, work)
            text = (snap.out / f"artifacts/{name}/{verb}.txt").read_text(encoding="utf-8")
            snap.write(f"artifacts/{name}/{verb}.txt", mask(text))
            del proc
        report = work / f"{name}_out" / "report.json"
        if report.exists():
            snap.write(f"artifacts/{name}/report.json", mask(report.read_text(encoding="utf-8")), [str(work)])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("out", type=Path)
    parser.add_argument("--tree", type=Path, action="append", default=[], help="a real repository (repeatable)")
    parser.add_argument("--artifacts", action="store_true", help="also the artifact commands on the corpus models")
    parser.add_argument("--python", default=sys.executable)
    parser.add_argument("--only", default=None, help="only corpus cases whose name contains this")
    parser.add_argument("--no-corpus", action="store_true")
    args = parser.parse_args()
    if args.out.exists():
        shutil.rmtree(args.out)
    snap = Snapshot(args.out, args.python)
    with tempfile.TemporaryDirectory(prefix="ts2export-snapshot-") as tmp:
        scratch = Path(tmp)
        if not args.no_corpus:
            for case in cases():
                if args.only is None or args.only in str(case):
                    snapshot_case(snap, case, scratch)
            snapshot_recording(snap, scratch)
            snapshot_gated(snap, scratch)
        for tree in args.tree:
            snapshot_tree(snap, tree.resolve())
        if args.artifacts:
            snapshot_artifacts(snap, scratch)
    print(f"wrote {sum(1 for p in args.out.rglob('*') if p.is_file())} files under {args.out}")


if __name__ == "__main__":
    main()
