"""scripts/gpu-check.sh and scripts/gpu_check.py without an accelerator: the shell script stops
with one line, and the checks it runs on a GPU are rehearsed on CPU in this process (the overhead
check is scripts/bench_artifacts.py, tested in test_bench_script.py; the AOTInductor check is the
`package` path of test_package.py)."""

import importlib.util
import os
import subprocess
import sys

import pytest
import torch

from .conftest import ROOT

pytestmark = pytest.mark.slow


def _gpu_check_module():
    spec = importlib.util.spec_from_file_location("gpu_check", ROOT / "scripts" / "gpu_check.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


@pytest.mark.skipif(torch.accelerator.is_available(), reason="checks the behaviour without an accelerator")
def test_gpu_check_sh_stops_with_one_line_without_an_accelerator():
    env = {**os.environ, "PYTHON": sys.executable}
    proc = subprocess.run(["bash", "scripts/gpu-check.sh"], capture_output=True, text=True, cwd=ROOT, env=env, timeout=300)
    assert proc.returncode == 1
    assert proc.stdout.splitlines() == ["== device-agnostic check: no CUDA-only call in the artifact wing"]
    assert proc.stderr.strip() == (
        "gpu-check: torch.accelerator finds no device; nothing to check (python scripts/gpu_check.py --device cpu rehearses on CPU)"
    )
    proc = subprocess.run([sys.executable, "scripts/gpu_check.py"], capture_output=True, text=True, cwd=ROOT, timeout=300)
    assert proc.returncode == 1 and proc.stderr.strip().startswith("gpu-check: torch.accelerator finds no device")


def test_the_checks_rehearse_on_cpu(cli, tmp_path, capsys, monkeypatch):
    gpu_check = _gpu_check_module()
    monkeypatch.setattr(gpu_check, "INVOKE", lambda args: cli(*args))
    args = gpu_check.argparse.Namespace(skip_aoti=True, quick=True, runs=3, repeats=1)
    dev = torch.device("cpu")
    numbers = {1, 2, 3, 5}  # 6 lowers a plain CPU program here, as test_lower.py does
    for i, (title, check) in enumerate(gpu_check.CHECKS, 1):
        if i in numbers:
            check(dev, tmp_path, args)
    out = capsys.readouterr().out
    assert "artifact names: stored ['cpu'], pinned ['cpu']; auto picks cpu" in out
    assert "ramp_cpu.pt2 runs on cpu and matches the TorchScript outputs made on cpu" in out
    assert "FAIL: 4 comparison(s), 4 mismatch(es)" in out  # the planted mismatch
    assert "error: --graph needs an accelerator" in out and "new / old" in out


def test_a_failing_check_is_reported_and_the_others_run(tmp_path, monkeypatch, capsys):
    gpu_check = _gpu_check_module()
    monkeypatch.setattr(gpu_check, "INVOKE", lambda args: (2, "", "error: broken on purpose"))
    monkeypatch.setattr(sys, "argv", ["gpu_check.py", "--device", "cpu", "--only", "3,5", "--workdir", str(tmp_path)])
    assert gpu_check.main() == 1
    out = capsys.readouterr().out
    assert "FAILED: planted mismatch: CheckFailed: exit code 2, expected 0" in out
    assert "FAILED: torch.cond: verify --benchmark --graph: CheckFailed: exit code 2, expected 0" in out
    assert out.strip().splitlines()[-1] == "gpu-check: 2 check(s) failed: planted mismatch; torch.cond: verify --benchmark --graph"


def test_no_cuda_only_call_outside_the_marked_fallback():
    proc = subprocess.run(
        ["grep", "-rnE", r"torch\.cuda\.|\.cuda\(", "migrate/artifact"],
        capture_output=True, text=True, cwd=ROOT,
    )
    unmarked = [line for line in proc.stdout.splitlines() if "torch<2.12 fallback" not in line]
    assert unmarked == []
    assert all("serving.py" in line for line in proc.stdout.splitlines())
