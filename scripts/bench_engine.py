"""Engine speed: files per second over a synthetic repository, with ratios against baselines run in
this same process (no pre-filter; one job). Prints figures; asserts nothing.

    python scripts/bench_engine.py [--files 600] [--share 0.1]
"""

from __future__ import annotations

import argparse
import os
import tempfile
import time
from pathlib import Path

from ts2export import engine
from ts2export.engine.discovery import discover
from ts2export.engine import Options, Task

PLAIN = '''import torch
from torch import nn


class Block{i}(nn.Module):
    def __init__(self, width: int = 64) -> None:
        super().__init__()
        self.fc1 = nn.Linear(width, width * 2)
        self.fc2 = nn.Linear(width * 2, width)
        self.norm = nn.LayerNorm(width)

    def forward(self, x):
        h = torch.relu(self.fc1(x))
        return self.norm(x + self.fc2(h))
''' + "".join(f"\n\ndef helper_{{i}}_{k}(x, y):\n    z = x * {k} + y\n    return z.sum(dim=-1, keepdim=True)\n" for k in range(20))

UTIL = '''"""Data helpers {i}: no model, no TorchScript."""
import json
import os


def read_split(root, name):
    with open(os.path.join(root, name + ".json")) as fh:
        return json.load(fh)
''' + "".join(f"\n\ndef transform_{{i}}_{k}(item):\n    return {{{{'x': item['x'] * {k}, 'y': item.get('y')}}}}\n" for k in range(20))

SCRIPTED = PLAIN + '''

from typing import List


class Legacy{i}(nn.Module):
    @torch.jit.ignore
    def describe(self) -> str:
        return "legacy"

    def forward(self, x):
        outs = torch.jit.annotate(List[torch.Tensor], [])
        outs.append(x)
        return torch.cat(outs)


torch.jit.set_fusion_strategy([("STATIC", 2)])
'''


def make_repo(root: Path, n: int, share: float) -> None:
    """``share`` of the files use TorchScript; of the rest, half define models, half are utilities."""
    every = max(1, round(1 / share)) if share > 0 else n + 1
    for i in range(n):
        pkg = root / f"pkg{i % 20}"
        pkg.mkdir(exist_ok=True)
        template = SCRIPTED if i % every == 0 else PLAIN if i % 2 else UTIL
        (pkg / f"mod{i}.py").write_text(template.format(i=i))


def timed(tasks, options, jobs) -> tuple[float, int]:
    start = time.perf_counter()
    results = engine.run(tasks, options, jobs=jobs)
    return time.perf_counter() - start, sum(len(r.findings) for r in results)


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--files", type=int, default=600)
    ap.add_argument("--share", type=float, default=0.1, help="share of files that use TorchScript")
    args = ap.parse_args()
    cores = os.cpu_count() or 1
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        make_repo(root, args.files, args.share)
        t0 = time.perf_counter()
        files = discover([root], root)
        t_discover = time.perf_counter() - t0
        tasks = [Task(str(f.path), f.kind) for f in files]
        scan = Options()
        t_all, n_all = timed(tasks, scan, cores)
        t_one, n_one = timed(tasks, scan, 1)
        real_prefilter = engine.prefilter
        engine.prefilter = lambda data, rules: True
        try:
            t_nopf, n_nopf = timed(tasks, scan, 1)
        finally:
            engine.prefilter = real_prefilter
        t_fix, _ = timed(tasks, Options(fix="unsafe"), cores)
    assert n_all == n_one == n_nopf
    print(f"files: {len(tasks)} ({args.share:.0%} use TorchScript, the rest half models, half utilities), findings: {n_all}, cores: {cores}")
    print(f"discovery:                     {t_discover * 1000:8.1f} ms")
    print(f"scan, 1 job, no pre-filter:    {t_nopf:8.2f} s  {len(tasks) / t_nopf:8.0f} files/s  (baseline)")
    print(f"scan, 1 job, pre-filter:       {t_one:8.2f} s  {len(tasks) / t_one:8.0f} files/s  {t_nopf / t_one:5.1f}x baseline")
    print(f"scan, {cores} jobs, pre-filter:      {t_all:8.2f} s  {len(tasks) / t_all:8.0f} files/s  {t_nopf / t_all:5.1f}x baseline")
    print(f"apply --unsafe-fixes (in memory), {cores} jobs: {t_fix:6.2f} s")


if __name__ == "__main__":
    main()
