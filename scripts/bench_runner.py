#!/usr/bin/env python3
"""The warm runner against cold interpreters: N small torch programs, run both ways in one run.

Each program is a file of its own (a few of the shapes the corpus has: a traced CNN saved and loaded,
a scripted module, an export), run as ``python prog.py OUT`` in its own folder. Cold: a new
interpreter per program (``subprocess.run``), as the harness ran them before. Warm: through
``ts2export.runner.WarmRunner`` (one server that imported torch once, a forked child per program);
its server's start is counted. Prints wall and CPU seconds for each way, the cost per program and
the ratio, and checks that both ways wrote the same outputs. Asserts nothing about speed.

    python scripts/bench_runner.py [-n 20]
"""

from __future__ import annotations

import argparse
import os
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path

PROGRAMS = {
    "trace_save_load": '''
import sys, torch
torch.manual_seed(0)
net = torch.nn.Sequential(torch.nn.Conv2d(3, 4, 3), torch.nn.ReLU(), torch.nn.AdaptiveAvgPool2d(1), torch.nn.Flatten())
traced = torch.jit.trace(net.eval(), torch.rand(2, 3, 8, 8))
torch.jit.save(traced, "m.pt")
torch.save(torch.jit.load("m.pt")(torch.rand(3, 3, 8, 8)), sys.argv[1])
''',
    "script_module": '''
import sys, torch
torch.manual_seed(0)
class Gate(torch.nn.Module):
    def forward(self, x):
        if x.sum() > 0:
            return x * 2
        return -x
torch.save(torch.jit.script(Gate())(torch.randn(4, 3)), sys.argv[1])
''',
    "export": '''
import sys, torch
torch.manual_seed(0)
m = torch.nn.Linear(8, 2).eval()
ep = torch.export.export(m, (torch.rand(3, 8),))
torch.save(ep.module()(torch.rand(3, 8)), sys.argv[1])
''',
}


def _children_cpu() -> float:
    r = resource.getrusage(resource.RUSAGE_CHILDREN)
    return r.ru_utime + r.ru_stime


def _write(root: Path, n: int) -> list[Path]:
    folders = []
    names = sorted(PROGRAMS)
    for i in range(n):
        folder = root / f"p{i:03d}"
        folder.mkdir()
        (folder / "prog.py").write_text(PROGRAMS[names[i % len(names)]])
        folders.append(folder)
    return folders


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("-n", type=int, default=20, help="programs (default 20)")
    args = parser.parse_args()
    sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
    import torch

    from ts2export.runner import WarmRunner

    env = dict(os.environ, PYTHONHASHSEED="0", OMP_NUM_THREADS="1")
    with tempfile.TemporaryDirectory(prefix="ts2export-bench-runner-") as tmp:
        root = Path(tmp)
        folders = _write(root, args.n)
        print(f"ts2export bench_runner: {args.n} programs ({', '.join(sorted(PROGRAMS))} in turn); "
              f"{os.cpu_count()} CPUs, load {os.getloadavg()[0]:.1f}; torch {torch.__version__}")

        cpu0, t0 = _children_cpu(), time.monotonic()
        for f in folders:
            proc = subprocess.run([sys.executable, "-W", "ignore::DeprecationWarning", "prog.py", "cold.pt"], cwd=f,
                                  env=env, capture_output=True, text=True, timeout=600)
            if proc.returncode != 0:
                raise SystemExit(f"{f.name} failed cold:\n{proc.stderr[-2000:]}")
        cold_wall, cold_cpu = time.monotonic() - t0, _children_cpu() - cpu0

        cpu0, t0 = _children_cpu(), time.monotonic()
        runner = WarmRunner({"PYTHONHASHSEED": "0", "OMP_NUM_THREADS": "1"})
        runner.wait_ready()
        started = time.monotonic() - t0
        for f in folders:
            done = runner.run(["prog.py", "warm.pt"], f, env, 600, ("ignore::DeprecationWarning",))
            if done.returncode != 0:
                raise SystemExit(f"{f.name} failed warm:\n{done.stderr[-2000:]}")
        runner.close()
        warm_wall, warm_cpu = time.monotonic() - t0, _children_cpu() - cpu0

        for f in folders:
            torch.testing.assert_close(torch.load(f / "warm.pt"), torch.load(f / "cold.pt"), rtol=0, atol=0)

    n = args.n
    print(f"{'':<34}{'wall s':>9}{'CPU s':>9}{'per program':>13}")
    print(f"{'cold (a new interpreter each)':<34}{cold_wall:>9.2f}{cold_cpu:>9.2f}{cold_wall / n:>12.3f}s")
    print(f"{'warm (one server, a fork each)':<34}{warm_wall:>9.2f}{warm_cpu:>9.2f}{warm_wall / n:>12.3f}s")
    print(f"{'  of which the server start':<34}{started:>9.2f}")
    print(f"ratio cold/warm: {cold_wall / warm_wall:.1f}x wall, {cold_cpu / max(warm_cpu, 1e-9):.1f}x CPU "
          f"(outputs equal, both ways)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
