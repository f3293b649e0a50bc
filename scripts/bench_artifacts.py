#!/usr/bin/env python
"""Benchmarks for the artifact wing. Prints figures; asserts nothing.

1. verify overhead: wall time of `verify` (load both artifacts, make inputs, run, compare) divided by
   the bare time to load the TorchScript and the .pt2 and run both on the same input sets.
   Target: <= 1.2x.
2. `.pte` (XNNPACK) vs TorchScript on CPU for the corpus models: median latency and file size, with
   ratios. Target: median latency ratio (.pte / TorchScript) <= 0.7. Needs executorch: without it,
   one line says the table is skipped. `--skip-latency` skips it (and lowering) on purpose.

`--models` takes corpus model names and `resnet18`, a ResNet-18 (torchvision's when installed, else
an equivalent built here) at 3x224x224, for the verify overhead at ResNet scale.

Usage: python scripts/bench_artifacts.py [--device auto|cpu|cuda] [--repeats N] [--iters N]
       [--models a,b,...] [--skip-latency]
"""

from __future__ import annotations

import argparse
import importlib.util
import logging
import statistics
import sys
import tempfile
import time
import warnings
from pathlib import Path

import torch
import torch.utils._pytree as pytree

ROOT = Path(__file__).resolve().parent.parent
CORPUS = ROOT / "corpus" / "models"
DEFAULT_MODELS = [
    "small_cnn", "multi_input_mlp", "dict_tuple_outputs", "embedding_bag", "branchy",
    "mx_block_scaled", "multi_method", "loop_accumulate", "mixed_dtypes",
]


def load_corpus(name: str):
    if name == "resnet18":
        return build_resnet18()
    spec = importlib.util.spec_from_file_location(f"corpus_{name}", CORPUS / f"{name}.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    model, example, specs = module.build()
    return model, example, specs, module.LEGACY


class _Block(torch.nn.Module):
    def __init__(self, cin: int, cout: int, stride: int) -> None:
        super().__init__()
        nn = torch.nn
        self.conv1 = nn.Conv2d(cin, cout, 3, stride, 1, bias=False)
        self.bn1 = nn.BatchNorm2d(cout)
        self.conv2 = nn.Conv2d(cout, cout, 3, 1, 1, bias=False)
        self.bn2 = nn.BatchNorm2d(cout)
        self.down = (
            nn.Sequential(nn.Conv2d(cin, cout, 1, stride, bias=False), nn.BatchNorm2d(cout))
            if stride != 1 or cin != cout else nn.Identity()
        )

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        out = torch.relu(self.bn1(self.conv1(x)))
        return torch.relu(self.bn2(self.conv2(out)) + self.down(x))


class ResNet18(torch.nn.Module):
    """The ResNet-18 layout (11.7 M parameters), for machines without torchvision."""

    def __init__(self, classes: int = 1000) -> None:
        super().__init__()
        nn = torch.nn
        self.stem = nn.Sequential(nn.Conv2d(3, 64, 7, 2, 3, bias=False), nn.BatchNorm2d(64), nn.ReLU(), nn.MaxPool2d(3, 2, 1))
        widths, blocks, cin = [64, 128, 256, 512], [], 64
        for i, w in enumerate(widths):
            blocks += [_Block(cin, w, 1 if i == 0 else 2), _Block(w, w, 1)]
            cin = w
        self.blocks = nn.Sequential(*blocks)
        self.fc = nn.Linear(512, classes)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.fc(torch.flatten(torch.nn.functional.adaptive_avg_pool2d(self.blocks(self.stem(x)), 1), 1))


def build_resnet18():
    torch.manual_seed(0)
    try:
        import torchvision

        model = torchvision.models.resnet18()
    except ImportError:
        model = ResNet18()
    return model.eval(), (torch.randn(2, 3, 224, 224),), ["float32[B=1..8,3,224,224]"], "trace"


def have_executorch() -> bool:
    return importlib.util.find_spec("executorch") is not None


def build(name: str, workdir: Path, lower_pte: bool):
    """Saved TorchScript, converted .pt2 and (with `lower_pte`) lowered .pte for one model."""
    from ts2export.artifact.convert import convert

    model, example, specs, legacy = load_corpus(name)
    pt = workdir / f"{name}.pt"
    ts = torch.jit.script(model) if legacy == "script" else torch.jit.trace(model, example)
    ts.save(str(pt))
    methods: list[str] = []
    if name == "multi_method":
        specs, methods = specs + [f"encode:{specs[0]}"], ["forward", "encode"]
    pt2, pte = workdir / f"{name}.pt2", workdir / f"{name}.pte"
    convert(str(pt), str(pt2), specs, None, methods)
    if lower_pte:
        from ts2export.artifact.lower import lower

        lower(str(pt2), str(pte))
    return pt, pt2, pte, example


def bare_run(pt: Path, pt2: Path, sets_by_method, device: torch.device) -> float:
    """Load both artifacts and run both on the same inputs: what verify must at least do."""
    from torch.export.passes import move_to_device_pass
    from torch.export.pt2_archive._package import load_pt2

    t0 = time.perf_counter()
    sm = torch.jit.load(str(pt), map_location=device)
    programs = {("forward" if k == "model" else k): ep for k, ep in load_pt2(str(pt2)).exported_programs.items()}
    with torch.inference_mode():
        for method, sets in sets_by_method.items():
            ep = programs[method]
            if device.type != "cpu":
                ep = move_to_device_pass(ep, device)
            mod = ep.module()
            for _, args, kwargs in sets:
                args = pytree.tree_map(lambda t: t.to(device) if isinstance(t, torch.Tensor) else t, args)
                out_old = getattr(sm, method)(*args)
                out_new = mod(*args)
                pytree.tree_map(lambda t: t.cpu() if isinstance(t, torch.Tensor) else t, (out_old, out_new))
    return time.perf_counter() - t0


def verify_overhead(names, workdir, built, device: str, repeats: int) -> None:
    from ts2export.artifact.devices import resolve_device
    from ts2export.artifact.loading import load_pt2
    from ts2export.artifact.verify import input_sets_for, verify

    dev, note = resolve_device(device)
    print(f"\n## verify overhead (device {dev}{'; ' + note if note else ''}; median of {repeats})\n")
    print(f"{'model':<20} {'verify s':>9} {'bare s':>9} {'ratio':>6}")
    ratios, v_total, b_total = [], 0.0, 0.0
    for name in names:
        pt, pt2, _, _ = built[name]
        programs, meta = load_pt2(pt2)
        sets = {m: input_sets_for(m, ep, meta, (), None, 3, 0) for m, ep in programs.items()}
        verify(str(pt), str(pt2), device=device)  # warm-up (first-call costs in torch)
        bare_run(pt, pt2, sets, dev)
        v_times, b_times = [], []
        for i in range(repeats):
            if i % 2:  # alternate the order so neither side always runs on warmer caches
                b_times.append(bare_run(pt, pt2, sets, dev))
            t0 = time.perf_counter()
            rep = verify(str(pt), str(pt2), device=device)
            v_times.append(time.perf_counter() - t0)
            if not i % 2:
                b_times.append(bare_run(pt, pt2, sets, dev))
            if not rep.ok:
                raise SystemExit(f"verify failed on {name}:\n{rep.to_text()}")
        v, b = statistics.median(v_times), statistics.median(b_times)
        ratios.append(v / b)
        v_total, b_total = v_total + v, b_total + b
        print(f"{name:<20} {v:>9.3f} {b:>9.3f} {v / b:>5.2f}x")
    med = statistics.median(ratios)
    agg = v_total / b_total
    print(
        f"\nverify overhead: median {med:.2f}x, all models together {agg:.2f}x, max {max(ratios):.2f}x "
        f"(target <= 1.2x: {'met' if max(med, agg) <= 1.2 else 'NOT met'})"
    )
    print("(TorchScript's profiling executor recompiles per new input shape; single-model ratios are noisy)")


def _median_latency(fn, iters: int) -> float:
    for _ in range(max(3, iters // 10)):
        fn()
    times = []
    for _ in range(iters):
        t0 = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t0)
    return statistics.median(times)


def latency_table(names, built, iters: int) -> None:
    from executorch.runtime import Runtime

    runtime = Runtime.get()
    print(f"\n## .pte (XNNPACK) vs TorchScript on CPU (torch threads {torch.get_num_threads()}; median of {iters} runs)\n")
    print(f"{'model':<20} {'TS ms':>8} {'pte ms':>8} {'lat ratio':>9} {'TS KiB':>8} {'pte KiB':>8} {'size ratio':>10}")
    lat_ratios, size_ratios = [], []
    for name in names:
        pt, _, pte, example = built[name]
        sm = torch.jit.load(str(pt))
        method = runtime.load_program(pte).load_method("forward")
        flat = [t.contiguous() for t in pytree.tree_leaves(example)]

        def run_ts():
            with torch.inference_mode():
                sm(*example)

        ts_ms = _median_latency(run_ts, iters) * 1e3
        pte_ms = _median_latency(lambda: method.execute(flat), iters) * 1e3
        ts_kib, pte_kib = pt.stat().st_size / 1024, pte.stat().st_size / 1024
        lat_ratios.append(pte_ms / ts_ms)
        size_ratios.append(pte_kib / ts_kib)
        print(f"{name:<20} {ts_ms:>8.3f} {pte_ms:>8.3f} {pte_ms / ts_ms:>8.2f}x {ts_kib:>8.1f} {pte_kib:>8.1f} {pte_kib / ts_kib:>9.2f}x")
    med = statistics.median(lat_ratios)
    print(
        f"\n.pte / TorchScript latency: median {med:.2f}x (target <= 0.7x: {'met' if med <= 0.7 else 'NOT met'}); "
        f"size: median {statistics.median(size_ratios):.2f}x"
    )


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--device", default="auto")
    parser.add_argument("--repeats", type=int, default=9)
    parser.add_argument("--iters", type=int, default=200)
    parser.add_argument("--models", default=",".join(DEFAULT_MODELS))
    parser.add_argument("--skip-latency", action="store_true")
    args = parser.parse_args()
    warnings.simplefilter("ignore")
    logging.disable(logging.CRITICAL)
    names = [n for n in args.models.split(",") if n]
    latency = not args.skip_latency
    if latency and not have_executorch():
        print("skipping the .pte latency table: executorch is not installed (pip install 'ts2export[edge]')")
        latency = False
    with tempfile.TemporaryDirectory() as tmp:
        workdir = Path(tmp)
        t0 = time.perf_counter()
        built = {name: build(name, workdir, latency) for name in names}
        kinds = "TorchScript, .pt2, .pte" if latency else "TorchScript, .pt2"
        print(f"built {len(built)} models ({kinds}) in {time.perf_counter() - t0:.1f} s")
        verify_overhead(names, workdir, built, args.device, args.repeats)
        if latency:
            latency_table(names, built, args.iters)
    return 0


if __name__ == "__main__":
    sys.exit(main())
