#!/usr/bin/env python3
"""The program model's cost over model zoos: the scan time of a real tree and the model's share.

A model zoo is where the program model's questions have the most paths: registries of hundreds
of model families behind star imports, factories that return other factories' results, tests that
script whatever a factory returns under one name, helpers called from everywhere. Before the
model remembered its answers, ``scan`` over a public zoo of 300 files did not finish in 30 minutes.

For each tree given (a fetched repository: nothing is downloaded here) it prints files and lines,
then ``ts2export scan --no-cache`` in a process of its own (wall and CPU seconds, peak memory), then
one in-process run with the program model's phases timed: its build (sites, links, units), the
views the rules read (entry points' inputs and kinds) and the decision (units held back), their
sum against the run, and the model's share.

``--generate 100,200,400`` also writes synthetic zoos of those many model files (the patterns
above, in proportion) and prints the model's time for each and its ratio to the smallest: it
grows with the code (a ratio near the files' ratio), not with the paths through it.

    python scripts/bench_zoo.py ../pytorch-image-models [--jobs 2] [--generate 100,200,400]

Asserts nothing; the figures go to docs/speed.md.
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path


def python_files(root: Path) -> tuple[int, int]:
    files = lines = 0
    for folder, dirs, names in os.walk(root):
        dirs[:] = [d for d in dirs if not d.startswith(".") and d not in ("__pycache__", "node_modules")]
        for name in names:
            if name.endswith(".py"):
                files += 1
                with open(os.path.join(folder, name), "rb") as fh:
                    lines += fh.read().count(b"\n")
    return files, lines


def scan_process(root: Path, jobs: int) -> tuple[float, float, float, int]:
    """Wall s, CPU s (with workers), peak MiB and exit code of `ts2export scan --no-cache`."""
    start = time.perf_counter()
    proc = subprocess.Popen([sys.executable, "-m", "ts2export", "scan", "--no-cache", "-j", str(jobs), "--format", "json", "."],
                            cwd=root, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    _, status, usage = os.wait4(proc.pid, 0)
    return (time.perf_counter() - start, usage.ru_utime + usage.ru_stime, usage.ru_maxrss / 1024,
            os.waitstatus_to_exitcode(status))


def model_phases(root: Path, jobs: int) -> dict[str, float]:
    """One in-process scan with the program model's phases timed (wall seconds)."""
    from ts2export import engine
    from ts2export.engine.config import load_config
    from ts2export.engine.discovery import discover
    from ts2export.model.program import Program

    times = {"build": 0.0, "views": 0.0, "decision": 0.0}

    def timed(phase, fn):
        def wrapper(*args, **kwargs):
            t0 = time.perf_counter()
            try:
                return fn(*args, **kwargs)
            finally:
                times[phase] += time.perf_counter() - t0
        return wrapper

    patches = {"__init__": "build", "views": "views", "attach": "decision", "solve": "decision"}
    saved = {name: getattr(Program, name) for name in patches}
    for name, phase in patches.items():
        setattr(Program, name, timed(phase, saved[name]))
    cwd = os.getcwd()
    try:
        os.chdir(root)
        config = load_config(Path("."))
        tasks = [engine.Task(str(f.path), f.kind) for f in discover([Path(".")], config.root, config.exclude)]
        start = time.perf_counter()
        engine.analyze(tasks, engine.Options(), jobs)
        times["run"] = time.perf_counter() - start
    finally:
        os.chdir(cwd)
        for name, fn in saved.items():
            setattr(Program, name, fn)
    return times


ZOO_MODEL = '''import torch
from torch import nn
from zoo.registry import register_model
from zoo.layers import make_block, helper
from zoo.publish import publish


class Net{i}(nn.Module):
    def __init__(self, dim: int = 8, depth: int = 2):
        super().__init__()
        self.blocks = nn.Sequential(*[make_block(dim, "relu" if k % 2 else "gelu") for k in range(depth)])

    @torch.jit.ignore
    def group_matcher(self, coarse: bool = False):
        return dict(stem=r"^blocks")

    def forward(self, x):
        return helper(self.blocks(x))


def _create(variant, **kwargs):
    if variant == "tiny":
        return Net{i}(dim=8, **kwargs)
    if variant == "small":
        return Net{i}(dim=16, **kwargs)
    return Net{i}(**kwargs)


@register_model
def net{i}_tiny(**kwargs):
    return _create("tiny", **kwargs)


@register_model
def net{i}_small(**kwargs):
    return _create("small", **kwargs)


def export(folder):
    publish(torch.jit.script(net{i}_tiny()), folder, "net{i}")
'''
ZOO_LAYERS = '''import torch
from torch import nn


def make_block(dim, act):
    if act == "relu":
        return nn.Sequential(nn.Linear(dim, dim), nn.ReLU())
    return nn.Sequential(nn.Linear(dim, dim), nn.GELU())


@torch.jit.script
def helper(x):
    return x * 2
'''
ZOO_PUBLISH = '''import os

import torch


def _write(module, path):
    torch.jit.save(module, path)


def _stage(module, folder, name):
    _write(module, os.path.join(folder, name + ".pt"))


def publish(module, folder, name):
    _stage(module, folder, name)
'''
ZOO_REGISTRY = '''_models = {}


def register_model(fn):
    _models[fn.__name__] = fn
    return fn


def create_model(name, **kwargs):
    return _models[name](**kwargs)


def list_models():
    return sorted(_models)
'''
ZOO_TEST = '''import pytest
import torch
from zoo import create_model, list_models


@pytest.mark.parametrize("name", list_models())
def test_torchscript(name):
    model = create_model(name)
    model.eval()
    model = torch.jit.script(model)
    model = torch.jit.script(model)
    model = torch.jit.script(model)
    out = model(torch.randn(2, 8))
    assert out.shape[0] == 2


def save(model, path):
    torch.jit.save(torch.jit.script(model), path)
'''


def generate(root: Path, models: int) -> None:
    pkg = root / "zoo"
    pkg.mkdir(parents=True)
    (pkg / "layers.py").write_text(ZOO_LAYERS)
    (pkg / "registry.py").write_text(ZOO_REGISTRY)
    (pkg / "publish.py").write_text(ZOO_PUBLISH)
    (pkg / "__init__.py").write_text("from .registry import create_model, list_models\n"
                                     + "".join(f"from .net{i} import *\n" for i in range(models)))
    for i in range(models):
        (pkg / f"net{i}.py").write_text(ZOO_MODEL.format(i=i))
    tests = root / "tests"
    tests.mkdir()
    (tests / "test_models.py").write_text(ZOO_TEST)
    calls = "".join(f"    save(create_model('net{i}_tiny'), f'out/{{name}}_{i}.pt')\n" for i in range(models))
    (tests / "test_save.py").write_text(f"from test_models import save\nfrom zoo import create_model\n\n\ndef export_all(name):\n{calls}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("trees", nargs="*", type=Path, help="fetched repositories to scan")
    parser.add_argument("--jobs", type=int, default=2)
    parser.add_argument("--generate", default="", help="comma-separated sizes of synthetic zoos (model files)")
    args = parser.parse_args()
    for tree in args.trees:
        tree = tree.resolve()
        files, lines = python_files(tree)
        print(f"{tree.name}: {files} Python files, {lines} lines")
        wall, cpu, peak, rc = scan_process(tree, args.jobs)
        print(f"  scan --no-cache -j {args.jobs}: {wall:.1f} s wall, {cpu:.1f} CPU s, {peak:.0f} MiB peak, exit {rc}")
        t = model_phases(tree, args.jobs)
        model = t["build"] + t["views"] + t["decision"]
        print(f"  in process: run {t['run']:.1f} s; program model {model:.1f} s = build {t['build']:.1f} + views "
              f"{t['views']:.1f} + decision {t['decision']:.1f} ({100 * model / t['run']:.0f}% of the run)")
    if args.generate:
        sizes = [int(s) for s in args.generate.split(",") if s]
        first = None
        print("synthetic zoo: model files, `scan --no-cache` (wall, CPU), program model s (build + views + decision) "
              "and its share of the in-process run, ratio to the smallest")
        for n in sizes:
            with tempfile.TemporaryDirectory(prefix="ts2export-zoo-") as tmp:
                generate(Path(tmp), n)
                wall, cpu, peak, rc = scan_process(Path(tmp), args.jobs)
                t = model_phases(Path(tmp), args.jobs)
            model = t["build"] + t["views"] + t["decision"]
            first = first or (n, model)
            print(f"  {n:5d}  scan -j {args.jobs}: {wall:6.1f} s wall {cpu:6.1f} CPU s {peak:5.0f} MiB (exit {rc});  "
                  f"program model {model:6.2f} s = build {t['build']:.2f} + views {t['views']:.2f} + decision "
                  f"{t['decision']:.2f}, {100 * model / t['run']:.0f}% of the run ({t['run']:.1f} s);  "
                  f"files x{n / first[0]:.1f}  model x{model / first[1]:.2f}")


if __name__ == "__main__":
    main()
