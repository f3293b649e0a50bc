"""The benchmark script runs and prints both figures (timings are printed, never asserted)."""

import re
import subprocess
import sys

import pytest

from .conftest import ROOT


@pytest.mark.slow
def test_bench_prints_verify_overhead_and_pte_table():
    proc = subprocess.run(
        [sys.executable, "scripts/bench_artifacts.py", "--models", "multi_input_mlp", "--repeats", "1", "--iters", "5"],
        capture_output=True, text=True, cwd=ROOT, timeout=300,
    )
    assert proc.returncode == 0, proc.stderr[-2000:]
    out = proc.stdout
    assert re.search(r"^multi_input_mlp\s+[\d.]+\s+[\d.]+\s+[\d.]+x$", out, re.M)
    assert re.search(r"^verify overhead: median [\d.]+x, all models together [\d.]+x", out, re.M)
    assert re.search(r"^multi_input_mlp(\s+[\d.]+){2}\s+[\d.]+x(\s+[\d.]+){2}\s+[\d.]+x$", out, re.M)
    assert re.search(r"^\.pte / TorchScript latency: median [\d.]+x \(target <= 0\.7x: (met|NOT met)\)", out, re.M)


@pytest.mark.slow
def test_bench_runs_without_executorch():
    """A GPU machine may have no executorch: the .pte table is skipped with one line, nothing is lowered."""
    argv = ["bench_artifacts.py", "--models", "multi_input_mlp", "--repeats", "1"]
    code = (
        "import runpy, sys; sys.modules['executorch'] = None; "
        f"sys.argv = {argv!r}; runpy.run_path('scripts/bench_artifacts.py', run_name='__main__')"
    )
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=ROOT, timeout=300)
    assert proc.returncode == 0, proc.stderr[-2000:]
    lines = proc.stdout.splitlines()
    assert lines[0] == "skipping the .pte latency table: executorch is not installed (pip install 'ts2export[edge]')"
    assert re.match(r"^built 1 models \(TorchScript, \.pt2\) in [\d.]+ s$", lines[1])
    assert re.search(r"^verify overhead: median [\d.]+x", proc.stdout, re.M)
    assert ".pte / TorchScript latency" not in proc.stdout
