"""Serving checks for `verify`: latency and peak memory on the device (`--benchmark`), and capture
of the new program in a device graph, replayed on fresh inputs (`--graph`).

Device-agnostic: synchronisation, memory statistics and graph capture go through
`torch.accelerator` (`torch.accelerator.Graph`, added in torch 2.12). On an older torch, CUDA
devices fall back to CUDA graphs (torch<2.12 fallback); other devices cannot capture there, and say so.
"""

from __future__ import annotations

import dataclasses
import statistics
import time
from collections.abc import Callable, Sequence
from typing import Any

import torch
import torch.utils._pytree as pytree

from ts2export.artifact.errors import ArtifactError, one_line

CAPTURE_WARMUP = 3


# ---- device helpers ----------------------------------------------------------------------------------


def synchronize(device: torch.device) -> None:
    if device.type != "cpu":
        torch.accelerator.synchronize(device)


def _memory_fn(name: str) -> Callable[..., Any] | None:
    fn = getattr(torch.accelerator, name, None)
    if fn is None:
        fn = getattr(getattr(torch.accelerator, "memory", None), name, None)
    return fn


def reset_peak_memory(device: torch.device) -> bool:
    """Reset the device's peak-memory counter; False where the device reports no memory."""
    reset = _memory_fn("reset_peak_memory_stats")
    if device.type == "cpu" or reset is None:
        return False
    try:
        reset(device.index)
    except Exception:  # a backend without memory statistics
        return False
    return True


def peak_memory(device: torch.device) -> int | None:
    peak = _memory_fn("max_memory_allocated")
    if device.type == "cpu" or peak is None:
        return None
    try:
        return int(peak(device.index))
    except Exception:
        return None


def _to(tree: Any, device: torch.device) -> Any:
    return pytree.tree_map(lambda t: t.to(device) if isinstance(t, torch.Tensor) else t, tree)


# ---- --benchmark -------------------------------------------------------------------------------------


@dataclasses.dataclass
class Timing:
    who: str  # "old", "new"
    kind: str  # torchscript, pt2, aoti, pte
    device: str
    median_ms: float
    min_ms: float
    peak_bytes: int | None


@dataclasses.dataclass
class Benchmark:
    method: str
    inputs: str
    warmup: int
    runs: int
    old: Timing
    new: Timing

    @property
    def ratio(self) -> float:
        return self.new.median_ms / self.old.median_ms if self.old.median_ms else float("inf")

    def to_dict(self) -> dict[str, Any]:
        d = dataclasses.asdict(self)
        d["ratio"] = round(self.ratio, 4)
        return d

    def to_text(self) -> list[str]:
        def mem(t: Timing) -> str:
            if t.peak_bytes is None:
                return f"peak memory not reported on {t.device}"
            return f"peak memory {t.peak_bytes / 2**20:.1f} MiB"

        width = max(len(f"{t.who} ({t.kind})") for t in (self.old, self.new))
        lines = [
            f"benchmark {self.method} on inputs {self.inputs}: {self.warmup} warm-up, median of {self.runs} run(s)"
        ]
        for t in (self.old, self.new):
            label = f"{t.who} ({t.kind})".ljust(width)
            lines.append(f"  {label}  {t.median_ms:9.3f} ms  (min {t.min_ms:.3f} ms) on {t.device}; {mem(t)}")
        lines.append(f"  new / old: {self.ratio:.2f}x")
        return lines


def time_runs(fn: Callable[[], Any], device: torch.device, warmup: int, runs: int) -> tuple[float, float, int | None]:
    """(median s, min s, peak device bytes or None): `warmup` untimed calls, then `runs` timed
    calls, each followed by a device synchronisation."""
    with torch.inference_mode():
        for _ in range(warmup):
            fn()
        synchronize(device)
        tracked = reset_peak_memory(device)
        times = []
        for _ in range(runs):
            t0 = time.perf_counter()
            fn()
            synchronize(device)
            times.append(time.perf_counter() - t0)
    return statistics.median(times), min(times), peak_memory(device) if tracked else None


def benchmark(
    method: str, input_set: tuple[str, tuple[Any, ...], dict[str, Any]], old: Any, new: Any, warmup: int, runs: int
) -> Benchmark:
    """Time `old` and `new` (runners: callable(method, args, kwargs) with .device and .kind) on one
    input set, already moved to each runner's device so that copies are not timed."""
    if runs < 1:
        raise ArtifactError("--runs must be >= 1")
    if warmup < 0:
        raise ArtifactError("--warmup must be >= 0")
    name, args, kwargs = input_set
    timings = []
    for who, runner in (("old", old), ("new", new)):
        dev = getattr(runner, "device", torch.device("cpu"))
        a, k = _to(args, dev), _to(kwargs, dev)
        try:
            med, low, peak = time_runs(lambda: runner(method, a, k), dev, warmup, runs)
        except ArtifactError:
            raise
        except Exception as exc:
            raise ArtifactError(f"benchmark: {who} model failed on {method} inputs {name}: {one_line(exc)}") from None
        timings.append(Timing(who, runner.kind, str(dev), med * 1e3, low * 1e3, peak))
    return Benchmark(method, name, warmup, runs, timings[0], timings[1])


# ---- --graph -----------------------------------------------------------------------------------------------


def graph_api(device: torch.device) -> str:
    """Which capture API serves `device`; raises ArtifactError (one line) where none does."""
    if device.type == "cpu":
        acc = torch.accelerator.current_accelerator(check_available=True)
        if acc is None:
            raise ArtifactError("--graph needs an accelerator: torch.accelerator finds none on this machine (cpu only)")
        raise ArtifactError(f"--graph needs an accelerator, and verify runs on cpu here; pass --device {acc.type}")
    if hasattr(torch.accelerator, "Graph"):
        return "torch.accelerator.Graph"
    if device.type == "cuda":
        return "torch.cuda.CUDAGraph"  # torch<2.12 fallback
    raise ArtifactError(
        f"--graph on {device.type} needs torch.accelerator.Graph (torch >= 2.12); this torch is {torch.__version__}"
    )


def _capture(fn: Callable[[], Any], device: torch.device) -> tuple[Any, Any]:
    """Capture `fn` in a device graph after warm-up on a side stream; returns (graph, outputs)."""
    if hasattr(torch.accelerator, "Graph"):
        stream = torch.Stream(device=device)
        stream.wait_stream(torch.accelerator.current_stream(device))
        with stream:
            for _ in range(CAPTURE_WARMUP):
                fn()
        torch.accelerator.current_stream(device).wait_stream(stream)
        synchronize(device)
        graph = torch.accelerator.Graph()
        with stream, graph:
            out = fn()
        return graph, out
    side = torch.cuda.Stream(device)  # torch<2.12 fallback: no torch.accelerator.Graph yet
    side.wait_stream(torch.cuda.current_stream(device))  # torch<2.12 fallback
    with torch.cuda.stream(side):  # torch<2.12 fallback
        for _ in range(CAPTURE_WARMUP):
            fn()
    torch.cuda.current_stream(device).wait_stream(side)  # torch<2.12 fallback
    synchronize(device)
    graph = torch.cuda.CUDAGraph()  # torch<2.12 fallback
    with torch.cuda.graph(graph):  # torch<2.12 fallback
        out = fn()
    return graph, out


def _shape_key(args: Any, kwargs: Any) -> tuple[Any, ...]:
    return tuple(
        (tuple(t.shape), t.dtype) if isinstance(t, torch.Tensor) else repr(t) for t in pytree.tree_leaves((args, kwargs))
    )


def _has_control_flow(runner: Any, method: str) -> bool:
    programs = getattr(runner, "programs", {}) or {}
    ep = programs.get(method)
    if ep is None:
        return False
    hops = {torch.ops.higher_order.cond, torch.ops.higher_order.while_loop}
    return any(
        n.op == "call_function" and n.target in hops
        for gm in ep.graph_module.modules() if isinstance(gm, torch.fx.GraphModule)
        for n in gm.graph.nodes
    )


@dataclasses.dataclass
class GraphRun:
    api: str
    captures: int
    replays: int


def graph_replays(
    method: str, sets: Sequence[tuple[str, tuple[Any, ...], dict[str, Any]]], runner: Any
) -> tuple[list[tuple[str, Any]], GraphRun]:
    """Capture `runner`'s method once per input shape, with placeholder (zero) inputs, then copy
    each input set into the captured inputs and replay: returns [(set name, replayed outputs)]."""
    dev = runner.device
    api = graph_api(dev)
    groups: dict[tuple[Any, ...], list[tuple[str, tuple[Any, ...], dict[str, Any]]]] = {}
    for s in sets:
        groups.setdefault(_shape_key(s[1], s[2]), []).append(s)
    results: list[tuple[str, Any]] = []
    replays = 0
    with torch.inference_mode():
        for members in groups.values():
            _, args0, kwargs0 = members[0]
            static_args = pytree.tree_map(lambda t: torch.zeros_like(t, device=dev) if isinstance(t, torch.Tensor) else t, args0)
            static_kwargs = pytree.tree_map(lambda t: torch.zeros_like(t, device=dev) if isinstance(t, torch.Tensor) else t, kwargs0)
            try:
                graph, out = _capture(lambda: runner(method, static_args, static_kwargs), dev)
            except ArtifactError:
                raise
            except Exception as exc:
                hint = ""
                if _has_control_flow(runner, method) and not hasattr(torch.accelerator, "Graph"):
                    hint = "; torch.cond/while_loop inside a device graph needs torch >= 2.12"
                raise ArtifactError(
                    f"--graph: capturing {method} in a device graph failed on {dev} with {api}: {one_line(exc, 200)}{hint}"
                ) from None
            static_leaves = [t for t in pytree.tree_leaves((static_args, static_kwargs)) if isinstance(t, torch.Tensor)]
            for name, args, kwargs in members:
                fresh = [t for t in pytree.tree_leaves((args, kwargs)) if isinstance(t, torch.Tensor)]
                for dst, src in zip(static_leaves, fresh):
                    dst.copy_(src)
                graph.replay()
                synchronize(dev)
                replays += 1
                results.append((name, pytree.tree_map(lambda t: t.clone() if isinstance(t, torch.Tensor) else t, out)))
    return results, GraphRun(api, len(groups), replays)
