#!/usr/bin/env python3
"""What `apply --test` costs: runs of the user's test command against the number of units, and the
time spent checking and fixing the tree against the time the tests take.

Generates a repository of N independent units (a module traced, saved and loaded back), K of which
an unsafe fix breaks for the repository's golden test (a branch the trace baked, which the exported
`torch.cond` computes for real), and F filler modules (plain models and helpers, half of them with
TorchScript-era code that needs the program model), runs `ts2export apply --unsafe-fixes --test
CMD` on it, and prints the units kept and rolled back, the command runs (the baseline included) and
their ratio to N, next to what trying each unit alone would cost (N + 1 runs).

Then, on the same tree, it runs the gated apply in this process twice: analysing every bisection
state from scratch (what `apply --test` did before 2026-12-01) and reusing one analysis across the
states (the first pass and the program model once; per state, the decision and the fix pass of the
files whose decision changed). It prints, for each, the seconds spent checking and fixing against
the seconds the test command ran, and the ratio of the two analysis times.

    python scripts/bench_gated.py                  # N = 8, 16 and 32 with K = 1 and 2, F = 200
    python scripts/bench_gated.py --units 16 --broken 3 --filler 400

Asserts nothing but the outcome (the broken units rolled back, the others kept).
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


FILLER = '''import torch
from torch import nn


class Block{i}(nn.Module):
    def __init__(self, dim: int = 8):
        super().__init__()
        self.proj = nn.Linear(dim, dim)
        self.norm = nn.LayerNorm(dim)

    def forward(self, x):
        y = self.norm(self.proj(x))
{extra}        return y + x


def build{i}(dim: int = 8) -> nn.Module:
    return Block{i}(dim)
'''
FILLER_JIT = """        if not torch.jit.is_scripting():
            y = y * 1.0
"""


def make_filler(root: Path, f: int) -> None:
    (root / "lib").mkdir(exist_ok=True)
    (root / "lib" / "__init__.py").write_text("")
    for i in range(f):
        (root / "lib" / f"block{i}.py").write_text(FILLER.format(i=i, extra=FILLER_JIT if i % 2 else ""))


def make_repo(root: Path, n: int, broken: set[int]) -> None:
    golden = []
    for i in range(n):
        k = i + 2
        body = THRESHOLD.format(k=k) if i in broken else SCALE.format(k=k)
        (root / f"unit{i}.py").write_text(MODEL.format(i=i, body=body))
        (root / f"export{i}.py").write_text(EXPORT.format(i=i))
        golden.append(-3.0 * k)  # the trace baked the positive branch: x * k for every batch
    (root / "check.py").write_text(CHECK.format(n=n, golden=golden))


def run(n: int, k: int, f: int) -> tuple[int, int, int, float, list[tuple[float, float, int]]]:
    broken = set(list(range(0, n, max(1, n // max(k, 1))))[:k])  # spread over the units
    with tempfile.TemporaryDirectory(prefix="ts2export-bench-gated-") as tmp:
        root = Path(tmp)
        make_repo(root, n, broken)
        make_filler(root, f)
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
        if rolled != k or kept < n - k:  # the filler's own fixes are units too, all kept
            raise SystemExit(f"unexpected outcome for N={n} K={k}:\n{out[-3000:]}")
        in_process = [in_process_run(root, reuse) for reuse in (False, True)]
        if in_process[0][3] != in_process[1][3]:
            raise SystemExit(f"N={n} K={k}: reusing the analysis left a different tree than analysing every state")
        return runs, kept, rolled, seconds, in_process


def in_process_run(root: Path, reuse: bool) -> tuple[float, float, int, dict]:
    """(analysis s, test s, runs, the tree it left) of one gated apply in this process, from the
    untouched tree."""
    from ts2export.engine import Options, Task
    from ts2export.engine.discovery import discover
    from ts2export.engine.gated import gated_apply

    files = {p: p.read_bytes() for p in root.rglob("*.py")}
    try:
        tasks = [Task(str(x.path), x.kind) for x in discover([root], root, [])]
        options = Options(fix="unsafe", plan="unsafe", rule_options={"inputs": {}, "root": str(root)})
        outcome = gated_apply(tasks, options, f"{sys.executable} check.py", root, jobs=None, reuse=reuse)
        return outcome.analysis_seconds, outcome.test_seconds, outcome.runs, {p: p.read_bytes() for p in files}
    finally:
        for p, data in files.items():
            p.write_bytes(data)


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--units", type=int, nargs="*", default=[8, 16, 32])
    parser.add_argument("--broken", type=int, nargs="*", default=[1, 2])
    parser.add_argument("--filler", type=int, default=200, help="filler modules besides the units")
    args = parser.parse_args(argv)
    rows = []
    print("| units N | broken K | kept | rolled back | test runs (baseline incl.) | runs / N | one run per unit (N + 1) | wall s |")
    print("|---|---|---|---|---|---|---|---|")
    for n in args.units:
        for k in args.broken:
            runs, kept, rolled, seconds, in_process = run(n, k, args.filler)
            rows.append((n, k, runs, in_process))
            print(f"| {n} | {k} | {kept} | {rolled} | {runs} | {runs / n:.2f} | {n + 1} | {seconds:.0f} |", flush=True)
    print()
    print(f"Checking and fixing against testing ({args.filler} filler modules; seconds, in this process):")
    print()
    print("| units N | broken K | states | tests s | analysis s, every state from scratch | analysis s, one analysis reused | ratio |")
    print("|---|---|---|---|---|---|---|")
    for n, k, runs, ((fresh, tests, *_), (reused, *_)) in rows:
        print(f"| {n} | {k} | {runs} | {tests:.1f} | {fresh:.1f} | {reused:.1f} | {fresh / max(reused, 1e-9):.1f}x |")
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
