#!/usr/bin/env python3
"""How many runs of the user's test command `apply --test` needs, against the number of units.

Generates a repository of N independent units (a module traced, saved and loaded back), K of which
an unsafe fix breaks for the repository's golden test (a branch the trace baked, which the exported
`torch.cond` computes for real), runs `ts2export apply --unsafe-fixes --test CMD` on it, and prints
the units kept and rolled back, the command runs (the baseline included) and their ratio to N,
next to what trying each unit alone would cost (N + 1 runs).

    python scripts/bench_gated.py                  # N = 8, 16 and 32 with K = 1 and 2
    python scripts/bench_gated.py --units 16 --broken 3
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

MODEL = '''import torch
from torch import nn


class Unit{i}(nn.Module):
    def forward(self, x):
{body}
'''
SCALE = "        return x * {k}\n"
THRESHOLD = "        if x.mean() > 0:\n            return x * {k}\n        return x - 1\n"
EXPORT = '''import os
import torch
from unit{i} import Unit{i}


def export(folder):
    traced = torch.jit.trace(Unit{i}(), torch.ones(2, 3))
    traced.save(os.path.join(folder, "unit{i}.pt"))


def load(folder):
    return torch.jit.load(os.path.join(folder, "unit{i}.pt"))
'''
CHECK = '''"""The repository's golden test: what production serves for a negative batch."""
import importlib
import sys
import tempfile

import torch

N = {n}
GOLDEN = {golden}
failed = []
with tempfile.TemporaryDirectory() as folder:
    for i in range(N):
        module = importlib.import_module(f"export{{i}}")
        module.export(folder)
        y = module.load(folder)(-3 * torch.ones(2, 3))
        if not torch.allclose(y, torch.tensor(GOLDEN[i]).expand(2, 3)):
            failed.append(f"golden::unit{{i}}")
for name in failed:
    print("FAILED", name)
sys.exit(1 if failed else 0)
'''


def make_repo(root: Path, n: int, broken: set[int]) -> None:
    golden = []
    for i in range(n):
        k = i + 2
        body = THRESHOLD.format(k=k) if i in broken else SCALE.format(k=k)
        (root / f"unit{i}.py").write_text(MODEL.format(i=i, body=body))
        (root / f"export{i}.py").write_text(EXPORT.format(i=i))
        golden.append(-3.0 * k)  # the trace baked the positive branch: x * k for every batch
    (root / "check.py").write_text(CHECK.format(n=n, golden=golden))


def run(n: int, k: int) -> tuple[int, int, int, float]:
    broken = set(list(range(0, n, max(1, n // max(k, 1))))[:k])  # spread over the units
    with tempfile.TemporaryDirectory(prefix="ts2export-bench-gated-") as tmp:
        root = Path(tmp)
        make_repo(root, n, broken)
        start = time.perf_counter()
        proc = subprocess.run(
            [sys.executable, "-m", "ts2export", "apply", "--unsafe-fixes", "--no-progress", "--test",
             f"{sys.executable} check.py", "."],
            cwd=root, capture_output=True, text=True, env=dict(os.environ, PYTHONDONTWRITEBYTECODE="1"),
        )
        seconds = time.perf_counter() - start
        out = proc.stdout + proc.stderr
        runs = next(int(line.split(" ran ")[1].split()[0]) for line in out.splitlines() if " ran " in line and "time(s)" in line)
        kept = next((int(line.split()[1]) for line in out.splitlines() if line.startswith("Kept ")), 0)
        rolled = next((int(line.split()[2]) for line in out.splitlines() if line.startswith("Rolled back ")), 0)
        if rolled != k or kept != n - k:
            raise SystemExit(f"unexpected outcome for N={n} K={k}:\n{out[-3000:]}")
        return runs, kept, rolled, seconds


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--units", type=int, nargs="*", default=[8, 16, 32])
    parser.add_argument("--broken", type=int, nargs="*", default=[1, 2])
    args = parser.parse_args(argv)
    print("| units N | broken K | kept | rolled back | test runs (baseline incl.) | runs / N | one run per unit (N + 1) | wall s |")
    print("|---|---|---|---|---|---|---|---|")
    for n in args.units:
        for k in args.broken:
            runs, kept, rolled, seconds = run(n, k)
            print(f"| {n} | {k} | {kept} | {rolled} | {runs} | {runs / n:.2f} | {n + 1} | {seconds:.0f} |", flush=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
