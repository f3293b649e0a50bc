#!/usr/bin/env python
"""Serving checks on an accelerator, run by scripts/gpu-check.sh. Prints every figure; exits 1 when a
check fails, or when no accelerator is found (one line), since the checks would prove nothing.

Checks (each through the `ts2export` command line, on models built here; nothing is downloaded):

1. device constants: a module traced on the device whose forward makes a tensor on the input's
   device (the trace bakes the device into the graph): `convert` runs there, `--to-device cpu`
   gives a .pt2 that runs on CPU, `verify` passes;
2. float16 and bfloat16 models traced on the device convert and verify;
3. a planted mismatch (one weight changed in the .pt2) gives exit 1 and MISMATCH;
4. an AOTInductor package for the device (`package --verify`), verified against the TorchScript
   original with `verify --benchmark`;
5. a scripted model whose `if` on a tensor becomes torch.cond: `verify --benchmark --graph` (on
   torch < 2.12, which has no torch.accelerator.Graph: --graph on the CNN through CUDAGraph, and for
   torch.cond either a pass or the one-line "needs torch >= 2.12" error);
6. `.pte` lowering of the device-converted program (skipped with one line without executorch);
7. verify overhead at ResNet scale (scripts/bench_artifacts.py --skip-latency).

`--device cpu` rehearses the same steps on CPU (where `--graph` must fail with its one line); the
test suite runs that rehearsal with --quick --skip-aoti.

Usage: python scripts/gpu_check.py [--device auto|cuda[:N]|xpu|...|cpu] [--quick] [--skip-aoti]
       [--repeats N] [--workdir DIR]
"""

from __future__ import annotations

import argparse
import importlib.util
import os
import subprocess
import sys
import tempfile
import time
import warnings
from collections.abc import Callable
from pathlib import Path

import torch

ROOT = Path(__file__).resolve().parent.parent


class CheckFailed(Exception):
    pass


def _subprocess(args: list[str]) -> tuple[int, str, str]:
    cmd = [sys.executable, "-m", "ts2export.artifact", *args]
    proc = subprocess.run(cmd, capture_output=True, text=True, cwd=ROOT, timeout=1800)
    return proc.returncode, proc.stdout, proc.stderr


# How the command line is run: (args) -> (exit code, stdout, stderr). The test suite runs the
# checks in its own process with typer's test runner instead.
INVOKE: Callable[[list[str]], tuple[int, str, str]] = _subprocess
LAST: list = [0, "", ""]


def run_cli(*args: object, expect: int | None = 0, contains: tuple[str, ...] = (), stream: str = "stdout") -> str:
    """Run `ts2export <args>`; print its output indented; check the exit code (unless `expect` is
    None) and that `contains` appear in stdout (or stderr). Returns stdout; the last exit code and
    stderr are kept in LAST."""
    print("$ ts2export " + " ".join(map(str, args)), flush=True)
    code, stdout, stderr = INVOKE([str(a) for a in args])
    LAST[:] = [code, stdout, stderr]
    for line in (stdout + stderr).splitlines():
        print(f"    {line}")
    if expect is not None and code != expect:
        raise CheckFailed(f"exit code {code}, expected {expect}")
    text = stdout if stream == "stdout" else stderr
    for needle in contains:
        if needle not in text:
            raise CheckFailed(f"{needle!r} not in the output")
    return stdout


# ---- models ------------------------------------------------------------------------------------------


class Ramp(torch.nn.Module):
    """Adds a ramp made on the input's device: a trace bakes that device into the graph."""

    def __init__(self) -> None:
        super().__init__()
        self.lin = torch.nn.Linear(16, 16)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        ramp = torch.linspace(0, 1, x.shape[-1], device=x.device)
        return self.lin(x) + ramp


class SmallCNN(torch.nn.Module):
    def __init__(self) -> None:
        super().__init__()
        nn = torch.nn
        self.features = nn.Sequential(nn.Conv2d(3, 8, 3, padding=1), nn.BatchNorm2d(8), nn.ReLU(), nn.Conv2d(8, 16, 3, 2, 1), nn.ReLU())
        self.head = nn.Linear(16, 10)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.head(self.features(x).mean(dim=(2, 3)))


class MLP(torch.nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.net = torch.nn.Sequential(torch.nn.Linear(32, 64), torch.nn.GELU(), torch.nn.Linear(64, 8))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.net(x)


class Branchy(torch.nn.Module):
    """A scripted `if` on a tensor value: TS2EPConverter turns it into torch.cond."""

    def __init__(self) -> None:
        super().__init__()
        self.lin = torch.nn.Linear(8, 8)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        h = self.lin(x)
        if x.mean() > 0.0:
            return h * 2.0
        return h - 1.0


def save_trace(model: torch.nn.Module, example: tuple[torch.Tensor, ...], path: Path) -> Path:
    with warnings.catch_warnings(), torch.no_grad():
        warnings.simplefilter("ignore")
        torch.jit.trace(model.eval(), example).save(str(path))
    return path


# ---- checks ------------------------------------------------------------------------------------------


def check_device_constants(dev: torch.device, work: Path, args: argparse.Namespace) -> None:
    from ts2export.artifact.loading import open_torchscript

    torch.manual_seed(0)
    pt = save_trace(Ramp().to(dev), (torch.randn(4, 16, device=dev),), work / "ramp.pt")
    _, chosen, _, needs = open_torchscript(pt, "auto")
    print(f"artifact names: stored {needs.stored}, pinned {needs.pinned}; auto picks {chosen}")
    if str(chosen) != str(dev) or str(dev) not in needs.pinned:
        raise CheckFailed(f"expected the graph to pin {dev} and auto to pick it")
    run_cli("convert", pt, "-o", work / "ramp.pt2", "-i", "float32[B=1..8,16]", contains=(f"converted on {dev}",))
    run_cli("verify", pt, work / "ramp.pt2", "--device", "auto", contains=("PASS",))
    run_cli("convert", pt, "-o", work / "ramp_cpu.pt2", "-i", "float32[B=1..8,16]", "--to-device", "cpu")
    # the moved program runs on CPU with the TorchScript results (made on the device)
    from torch.export.pt2_archive._package import load_pt2

    ep = load_pt2(str(work / "ramp_cpu.pt2")).exported_programs["model"]
    x = torch.randn(3, 16)
    sm = torch.jit.load(str(pt), map_location=dev)
    with torch.inference_mode():
        torch.testing.assert_close(ep.module()(x), sm(x.to(dev)).cpu())
    print("ramp_cpu.pt2 runs on cpu and matches the TorchScript outputs made on", dev)


def check_dtypes(dev: torch.device, work: Path, args: argparse.Namespace) -> None:
    torch.manual_seed(1)
    cnn = SmallCNN().to(dev).half()
    pt = save_trace(cnn, (torch.randn(2, 3, 16, 16, device=dev, dtype=torch.float16),), work / "cnn_fp16.pt")
    run_cli("convert", pt, "-o", work / "cnn_fp16.pt2", "-i", "float16[B=1..8,3,16,16]")
    run_cli("verify", pt, work / "cnn_fp16.pt2", "--device", str(dev), contains=("PASS", "float16"))
    mlp = MLP().to(dev).to(torch.bfloat16)
    pt = save_trace(mlp, (torch.randn(4, 32, device=dev, dtype=torch.bfloat16),), work / "mlp_bf16.pt")
    run_cli("convert", pt, "-o", work / "mlp_bf16.pt2", "-i", "bfloat16[B=1..16,32]")
    run_cli("verify", pt, work / "mlp_bf16.pt2", "--device", str(dev), contains=("PASS", "bfloat16"))


def _cnn(dev: torch.device, work: Path) -> tuple[Path, Path]:
    pt, pt2 = work / "cnn.pt", work / "cnn.pt2"
    if not pt2.exists():
        torch.manual_seed(2)
        save_trace(SmallCNN().to(dev), (torch.randn(2, 3, 16, 16, device=dev),), pt)
        run_cli("convert", pt, "-o", pt2, "-i", "float32[B=1..8,3,16,16]")
    return pt, pt2


def check_mismatch(dev: torch.device, work: Path, args: argparse.Namespace) -> None:
    from ts2export.artifact.loading import load_pt2, save_pt2

    pt, pt2 = _cnn(dev, work)
    programs, meta = load_pt2(pt2)
    ep = programs["forward"]
    key = next(k for k in ep.state_dict if k.endswith("head.weight"))
    with torch.no_grad():
        ep.state_dict[key][0, 0] += 0.5
    save_pt2(work / "planted.pt2", programs, meta)
    run_cli("verify", pt, work / "planted.pt2", "--device", str(dev), expect=1, contains=("MISMATCH", "FAIL"))


def check_aoti(dev: torch.device, work: Path, args: argparse.Namespace) -> None:
    if args.skip_aoti:
        print("skipped (--skip-aoti)")
        return
    pt, pt2 = _cnn(dev, work)
    t0 = time.perf_counter()
    run_cli("package", pt2, "-o", work / "cnn_aoti.pt2", "--device", str(dev), "--verify", contains=("PASS",))
    print(f"package + verify: {time.perf_counter() - t0:.1f} s")
    run_cli("verify", pt, work / "cnn_aoti.pt2", "--benchmark", "--runs", args.runs, contains=("PASS", "new (aoti)"))


def check_cond_graph(dev: torch.device, work: Path, args: argparse.Namespace) -> None:
    torch.manual_seed(3)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        torch.jit.script(Branchy().eval()).save(str(work / "branchy.pt"))
    run_cli("convert", work / "branchy.pt", "-o", work / "branchy.pt2", "-i", "float32[B=2..8,8]", "--device", str(dev))
    from ts2export.artifact.loading import load_pt2

    ep = load_pt2(work / "branchy.pt2")[0]["forward"]
    if not any(n.target is torch.ops.higher_order.cond for n in ep.graph.nodes):
        raise CheckFailed("the converted program holds no torch.cond")
    flags = ("--benchmark", "--runs", args.runs, "--graph", "--samples", 4)
    if dev.type == "cpu":
        run_cli("verify", work / "branchy.pt", work / "branchy.pt2", "--device", "cpu", *flags, expect=2,
                contains=("--graph needs an accelerator",), stream="stderr")
        run_cli("verify", work / "branchy.pt", work / "branchy.pt2", "--device", "cpu", "--benchmark", "--runs", args.runs,
                contains=("PASS", "new / old"))
        return
    if hasattr(torch.accelerator, "Graph"):
        run_cli("verify", work / "branchy.pt", work / "branchy.pt2", "--device", str(dev), *flags,
                contains=("PASS", "graph replay", "new / old"))
        return
    # torch < 2.12: CUDA graphs through torch.cuda.CUDAGraph; torch.cond inside one needs 2.12
    pt, pt2 = _cnn(dev, work)
    run_cli("verify", pt, pt2, "--device", str(dev), "--graph", contains=("PASS", "graph replay"))
    run_cli("verify", work / "branchy.pt", work / "branchy.pt2", "--device", str(dev), *flags, expect=None)
    code, _, err = LAST
    if code == 0:
        print(f"torch {torch.__version__} captured torch.cond in a device graph")
    elif code == 2 and "needs torch >= 2.12" in err:
        print(f"as documented: torch {torch.__version__} cannot capture torch.cond in a device graph (one clear line)")
    else:
        raise CheckFailed(f"exit code {code}: neither a pass nor the one-line torch >= 2.12 error")


def check_pte(dev: torch.device, work: Path, args: argparse.Namespace) -> None:
    if importlib.util.find_spec("executorch") is None:
        print("skipping .pte lowering: executorch is not installed")
        return
    src = work / "ramp.pt2"
    if not src.exists():
        raise CheckFailed("ramp.pt2 missing (the device-constants check failed)")
    run_cli("lower", src, "-o", work / "ramp.pte", "--verify", contains=("PASS",))


def check_overhead(dev: torch.device, work: Path, args: argparse.Namespace) -> None:
    models = "small_cnn" if args.quick else "small_cnn,resnet18"
    cmd = [sys.executable, "scripts/bench_artifacts.py", "--device", str(dev), "--models", models,
           "--repeats", str(args.repeats), "--skip-latency"]
    print("$ " + " ".join(cmd[1:]), flush=True)
    proc = subprocess.run(cmd, capture_output=True, text=True, cwd=ROOT, timeout=3600)
    for line in (proc.stdout + proc.stderr).splitlines():
        print(f"    {line}")
    if proc.returncode != 0 or "verify overhead: median" not in proc.stdout:
        raise CheckFailed(f"bench_artifacts.py exited {proc.returncode}")


CHECKS: list[tuple[str, Callable[..., None]]] = [
    ("device constants (traced on the device)", check_device_constants),
    ("float16 and bfloat16 models", check_dtypes),
    ("planted mismatch", check_mismatch),
    ("AOTInductor package", check_aoti),
    ("torch.cond: verify --benchmark --graph", check_cond_graph),
    (".pte lowering of the device program", check_pte),
    ("verify overhead at ResNet scale", check_overhead),
]


def pick_device(name: str) -> torch.device:
    if name == "auto":
        acc = torch.accelerator.current_accelerator(check_available=True)
        if acc is None:
            raise SystemExit("gpu-check: torch.accelerator finds no device; nothing to check (--device cpu rehearses on CPU)")
        return torch.device(acc.type, torch.accelerator.current_device_index())
    dev = torch.device(name)
    if dev.type != "cpu" and not torch.accelerator.is_available():
        raise SystemExit(f"gpu-check: {name} is not present (torch.accelerator finds no device)")
    return dev


def describe(dev: torch.device) -> str:
    if dev.type == "cpu":
        return "cpu (rehearsal)"
    backend = getattr(torch, dev.type, None)
    name = getattr(backend, "get_device_name", None)
    return f"{dev} ({name(dev) if name else dev.type})"


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--device", default="auto")
    parser.add_argument("--quick", action="store_true", help="overhead on small_cnn only")
    parser.add_argument("--skip-aoti", action="store_true", help="skip the AOTInductor package (a minute of compiling)")
    parser.add_argument("--repeats", type=int, default=int(os.environ.get("REPEATS", 5)))
    parser.add_argument("--runs", type=int, default=20)
    parser.add_argument("--workdir", type=Path)
    parser.add_argument("--only", help="comma-separated check numbers (1-7)")
    args = parser.parse_args()
    dev = pick_device(args.device)
    print(f"gpu-check: torch {torch.__version__}, device {describe(dev)}, {time.strftime('%Y-%m-%d')}", flush=True)
    only = {int(i) for i in args.only.split(",")} if args.only else None
    failed = []
    with tempfile.TemporaryDirectory() as tmp:
        work = args.workdir or Path(tmp)
        work.mkdir(parents=True, exist_ok=True)
        for i, (title, check) in enumerate(CHECKS, 1):
            if only and i not in only:
                continue
            print(f"\n== {i}. {title}", flush=True)
            t0 = time.perf_counter()
            try:
                check(dev, work, args)
            except Exception as exc:  # one line per failed check; the others still run
                print(f"FAILED: {title}: {type(exc).__name__}: {exc}".splitlines()[0])
                failed.append(title)
                continue
            print(f"ok ({time.perf_counter() - t0:.1f} s)")
    if failed:
        print(f"\ngpu-check: {len(failed)} check(s) failed: {'; '.join(failed)}")
        return 1
    print("\ngpu-check: all checks passed")
    return 0


if __name__ == "__main__":
    sys.exit(main())
