"""Run an old TorchScript artifact and a new .pt2/.pte on the same inputs and compare the outputs."""

from __future__ import annotations

import dataclasses
import json
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import torch
import torch.utils._pytree as pytree

from ts2export.artifact.compare import CompareResult, compare_outputs
from ts2export.artifact.errors import ArtifactError, one_line
from ts2export.artifact.fsutil import native_stderr_silenced
from ts2export.artifact.devices import move_program, require_present, resolve_device
from ts2export.artifact.inputs import bind_inputs, conform, load_inputs_file
from ts2export.artifact.loading import artifact_kind, load_pt2, load_reference, open_torchscript, script_methods
from ts2export.artifact.serving import Benchmark, GraphRun, benchmark, graph_api, graph_replays
from ts2export.artifact.specs import DEFAULT_DIM_CAP, Signature, parse_specs, signature_from_program, specs_for

InputSet = tuple[str, tuple[Any, ...], dict[str, Any]]


# ---- runners ---------------------------------------------------------------------------------------------


class TorchScriptRunner:
    kind = "torchscript"

    def __init__(self, path: str, device: torch.device | str = "auto", prefer_accelerator: bool = True) -> None:
        self.module, self.device, self.notes, self.needs = open_torchscript(path, str(device), prefer_accelerator)
        self.methods = script_methods(self.module)

    def params(self, method: str) -> list[Any]:
        return list(getattr(self.module, method).schema.arguments)[1:]

    def __call__(self, method: str, args: tuple[Any, ...], kwargs: dict[str, Any]) -> Any:
        try:
            return getattr(self.module, method)(*args, **kwargs)
        except Exception as exc:
            elsewhere = [d for d in self.needs.pinned if d != str(self.device)]
            if not elsewhere:
                raise
            raise ArtifactError(
                f"old model failed on {self.device}: {one_line(exc)} (its graph makes tensors on "
                f"{', '.join(self.needs.pin_text(d) for d in elsewhere)}; run it there with --device)"
            ) from None


class ProgramRunner:
    kind = "pt2"

    def __init__(self, programs: dict[str, Any], device: torch.device) -> None:
        self.device = device
        self.programs = {name: move_program(ep, device) for name, ep in programs.items()}
        self.modules = {name: ep.module() for name, ep in self.programs.items()}
        self.methods = list(programs)

    def __call__(self, method: str, args: tuple[Any, ...], kwargs: dict[str, Any]) -> Any:
        return self.modules[method](*args, **kwargs)


# ExecuTorch ScalarType codes (c10 order) for the dtypes a .pte input can have.
_SCALAR_TYPES = {
    0: torch.uint8, 1: torch.int8, 2: torch.int16, 3: torch.int32, 4: torch.int64, 5: torch.float16,
    6: torch.float32, 7: torch.float64, 11: torch.bool, 15: torch.bfloat16,
}


class PteRunner:
    """Runs a .pte through executorch.runtime on CPU. Outputs come back flat; `out_specs` (from the
    .pt2) rebuild their structure when known."""

    kind = "pte"
    device = torch.device("cpu")

    def __init__(self, path: str, out_specs: dict[str, Any] | None = None) -> None:
        try:
            from executorch.runtime import Runtime
        except ImportError:
            raise ArtifactError("running a .pte needs executorch: pip install 'ts2export[edge]'") from None
        p = Path(path)
        if not p.is_file():
            raise ArtifactError(f"{p}: no such file")
        try:
            with native_stderr_silenced():
                self.program = Runtime.get().load_program(p)
            self.methods = sorted(self.program.method_names, key=lambda n: (n != "forward", n))
        except Exception as exc:
            raise ArtifactError(f"{p}: cannot load .pte: {one_line(exc)}") from None
        self._loaded: dict[str, Any] = {}
        self.out_specs = out_specs or {}

    def planned_sizes(self, method: str) -> list[list[int]]:
        """Per input, the sizes memory is planned for (upper bounds of dynamic dims)."""
        meta = self.program.metadata(method)
        return [list(meta.input_tensor_meta(i).sizes()) for i in range(meta.num_inputs())]

    def check(self, method: str, flat: list[Any]) -> None:
        """Inputs must fit the .pte's method: count, dtype, rank, and sizes within the planned
        (upper-bound) sizes; ExecuTorch itself does not always refuse a larger input."""
        meta = self.program.metadata(method)
        if meta.num_inputs() != len(flat):
            raise ArtifactError(f"the .pte's {method} takes {meta.num_inputs()} input(s), got {len(flat)}")
        for i, t in enumerate(flat):
            if not isinstance(t, torch.Tensor):
                continue
            tm = meta.input_tensor_meta(i)
            bound = list(tm.sizes())
            want = _SCALAR_TYPES.get(int(tm.dtype()))
            if want is not None and t.dtype != want:
                raise ArtifactError(
                    f"{method} input {i} has dtype {str(t.dtype).removeprefix('torch.')}, the .pte expects "
                    f"{str(want).removeprefix('torch.')}"
                )
            if t.dim() != len(bound):
                raise ArtifactError(f"{method} input {i} has rank {t.dim()}, the .pte expects rank {len(bound)}")
            for axis, (size, top) in enumerate(zip(t.shape, bound)):
                if size > top:
                    raise ArtifactError(
                        f"{method} input {i} dim {axis} is {size}, the .pte allows at most {top} (shape {bound})"
                    )

    def __call__(self, method: str, args: tuple[Any, ...], kwargs: dict[str, Any]) -> Any:
        flat = [t.detach().cpu().contiguous() if isinstance(t, torch.Tensor) else t for t in pytree.tree_leaves((args, kwargs))]
        self.check(method, flat)
        with native_stderr_silenced():
            if method not in self._loaded:
                self._loaded[method] = self.program.load_method(method)
            outs = [o.clone() if isinstance(o, torch.Tensor) else o for o in self._loaded[method].execute(flat)]
        spec = self.out_specs.get(method)
        return pytree.tree_unflatten(outs, spec) if spec is not None else outs

    @property
    def flat(self) -> bool:
        return not self.out_specs


class ReferenceRunner:
    kind = "reference"

    def __init__(self, target: str, device: torch.device) -> None:
        self.model = load_reference(target).to(device)
        self.device = device

    def __call__(self, method: str, args: tuple[Any, ...], kwargs: dict[str, Any]) -> Any:
        return getattr(self.model, method)(*args, **kwargs)


# ---- report --------------------------------------------------------------------------------------------


@dataclasses.dataclass
class Comparison:
    method: str
    inputs: str
    pair: str  # e.g. "old vs new"
    result: CompareResult


@dataclasses.dataclass
class VerifyReport:
    old: str
    new: str
    device: str
    notes: list[str]
    comparisons: list[Comparison]
    seconds: dict[str, float]
    benchmarks: list[Benchmark] = dataclasses.field(default_factory=list)
    graph: GraphRun | None = None

    @property
    def ok(self) -> bool:
        return all(c.result.ok for c in self.comparisons)

    def mismatches(self) -> list[Comparison]:
        return [c for c in self.comparisons if not c.result.ok]

    def to_dict(self) -> dict[str, Any]:
        rows = []
        for c in self.comparisons:
            base = {"method": c.method, "inputs": c.inputs, "pair": c.pair, "ok": c.result.ok}
            if c.result.structure:
                rows.append({**base, "output": None, "detail": c.result.structure})
            for leaf in c.result.leaves:
                rows.append({**base, **dataclasses.asdict(leaf)})
        return {
            "status": "pass" if self.ok else "mismatch",
            "old": self.old,
            "new": self.new,
            "device": self.device,
            "notes": self.notes,
            "comparisons": len(self.comparisons),
            "mismatches": len(self.mismatches()),
            "rows": rows,
            "seconds": {k: round(v, 4) for k, v in self.seconds.items()},
            "benchmark": [b.to_dict() for b in self.benchmarks],
            "graph": dataclasses.asdict(self.graph) if self.graph else None,
        }

    def to_json(self) -> str:
        return json.dumps(self.to_dict(), indent=2)

    def to_text(self) -> str:
        head = ["method", "inputs", "pair", "output", "shape", "dtype", "max_abs", "max_rel", "%out", "result"]
        lines = [head]

        def f(x: float | None) -> str:
            return "-" if x is None else f"{x:.3g}"

        for c in self.comparisons:
            if c.result.structure:
                lines.append([c.method, c.inputs, c.pair, "-", "-", "-", "-", "-", "-", "MISMATCH"])
            for leaf in c.result.leaves:
                shape = "x".join(str(s) for s in leaf.shape) if leaf.shape is not None else "-"
                lines.append(
                    [
                        c.method, c.inputs, c.pair, leaf.output, shape or "scalar", leaf.dtype or "-",
                        f(leaf.max_abs), f(leaf.max_rel),
                        "-" if leaf.pct_out is None else f"{leaf.pct_out:.2f}",
                        "ok" if leaf.ok else "MISMATCH",
                    ]
                )
        widths = [max(len(str(row[i])) for row in lines) for i in range(len(head))]
        out = [f"note: {n}" for n in self.notes]
        out += ["  ".join(str(v).ljust(w) for v, w in zip(row, widths)).rstrip() for row in lines]
        for c in self.mismatches():
            if c.result.structure:
                out.append(f"{c.method} {c.inputs} {c.pair}: {c.result.structure}")
            for leaf in c.result.leaves:
                if not leaf.ok and leaf.detail:
                    out.append(f"{c.method} {c.inputs} {c.pair} {leaf.output}: {leaf.detail}")
        if self.graph is not None:
            out.append(
                f"graph: captured {self.graph.captures} time(s) with {self.graph.api} on {self.device}, "
                f"replayed {self.graph.replays} time(s) on fresh inputs (rows 'old vs new (graph replay)')"
            )
        for b in self.benchmarks:
            out += b.to_text()
        n, bad = len(self.comparisons), len(self.mismatches())
        verdict = "PASS" if self.ok else "FAIL"
        out.append(f"{verdict}: {n} comparison(s), {bad} mismatch(es) on {self.device}; {self.old} vs {self.new}")
        return "\n".join(out)


# ---- inputs -----------------------------------------------------------------------------------------------


def generated_sets(
    sig: Signature, count: int, seed: int, cap: int = DEFAULT_DIM_CAP, in_spec: Any = None
) -> list[InputSet]:
    """Generated input sets; `in_spec` (a program's (args, kwargs) TreeSpec) rebuilds nested or
    keyword inputs from the flat tensors, else they are positional."""
    gen = torch.Generator().manual_seed(seed)
    out = []
    for i, (label, sizes) in enumerate(sig.sample_sizes(count, cap=cap, seed=seed)):
        size_txt = ",".join(f"{k}={v}" for k, v in sizes.items())
        name = f"gen{i}:{label}" + (f"({size_txt})" if size_txt else "")
        flat = sig.make(sizes, gen)
        if in_spec is not None and in_spec.num_leaves == len(flat):
            args, kwargs = pytree.tree_unflatten(flat, in_spec)
            out.append((name, tuple(args), dict(kwargs)))
        else:
            out.append((name, tuple(flat), {}))
    return out


@dataclasses.dataclass
class Described:
    """What a new artifact tells about its inputs: a signature to generate samples from and to
    check inputs against, the stored example, and the input tree structure."""

    signature: Signature | None
    example: tuple[tuple[Any, ...], dict[str, Any]] | None
    in_spec: Any


def describe_program(program: Any, meta: dict[str, Any], method: str) -> Described:
    recorded = meta.get("methods", {}).get(method) or {}
    sig = signature_from_program(program, recorded.get("value_ranges"), recorded.get("specs"))
    example = None
    if program.example_inputs is not None:
        args, kwargs = program.example_inputs
        example = (tuple(args), dict(kwargs))
    return Described(sig, example, program.call_spec.in_spec)


def input_sets_for(
    method: str,
    program: Any | None,
    meta: dict[str, Any],
    specs: Sequence[str],
    inputs_file: str | None,
    samples: int,
    seed: int,
    size_limits: Sequence[Sequence[int]] | None = None,
    params: Sequence[Any] | None = None,
    described: Described | None = None,
) -> list[InputSet]:
    """Stored example inputs and generated samples (from the program's specs, or the user's).
    `size_limits` (per flat input, per dim) caps the dynamic dims, e.g. at a .pte's planned sizes.
    `params` (the TorchScript method's schema arguments) bind an --inputs file; `described` stands
    in for `program` where there is none (an AOTInductor package)."""
    if specs and inputs_file:
        raise ArtifactError("give --input or --inputs, not both")
    if described is None and program is not None:
        described = describe_program(program, meta, method)
    prog_sig = described.signature if described is not None else None
    if prog_sig is not None and size_limits is not None:
        prog_sig.limit_dims(size_limits)
    sets: list[InputSet] = []
    if inputs_file:
        args = bind_inputs(load_inputs_file(inputs_file), params, method, str(inputs_file))
        if described is not None and described.in_spec is not None:
            args, _ = conform((args, {}), described.in_spec)
        sets.append(("file", tuple(args), {}))
    elif specs:
        user_sig = parse_specs(specs)
        in_spec = described.in_spec if described is not None else None
        sets.extend(generated_sets(user_sig, max(samples, 1), seed, in_spec=in_spec))
    else:
        if described is None:
            raise ArtifactError("a .pte keeps no input specs; pass --input SPEC ... or --inputs FILE")
        if described.example is None and described.signature is None:
            raise ArtifactError(
                "the package keeps no input specs (not made by ts2export package); pass --input SPEC ... or --inputs FILE"
            )
        if described.example is not None:
            sets.append(("example", *described.example))
        if prog_sig is not None:
            sets.extend(generated_sets(prog_sig, samples, seed, in_spec=described.in_spec))
    if prog_sig is not None:
        for name, args, kwargs in sets:
            flat = pytree.tree_leaves((args, kwargs))
            prog_sig.check(flat, what=f"{method} inputs ({name})")
    return sets


# ---- verify ----------------------------------------------------------------------------------------------


def _to(tree: Any, device: torch.device) -> Any:
    return pytree.tree_map(lambda t: t.to(device) if isinstance(t, torch.Tensor) else t, tree)


def _run(runner: Callable[..., Any], who: str, method: str, name: str, args: Any, kwargs: Any) -> Any:
    dev = getattr(runner, "device", torch.device("cpu"))
    try:
        return runner(method, _to(args, dev), _to(kwargs, dev))
    except ArtifactError:
        raise
    except Exception as exc:
        raise ArtifactError(f"{who} model failed on {method} inputs {name}: {one_line(exc)}") from None


def compare_runs(
    method: str,
    sets: Sequence[InputSet],
    runners: dict[str, Any],
    rtol: float | None,
    atol: float | None,
    flat: bool,
    labels: tuple[str, str] = ("old", "new"),
) -> list[Comparison]:
    """runners: {"old": r, "new": r, optional "reference": r}. Compares old vs new, and the reference
    against both when given."""
    out = []
    with torch.inference_mode():
        for name, args, kwargs in sets:
            results = {who: _run(r, who, method, name, args, kwargs) for who, r in runners.items()}
            out.append(Comparison(method, name, f"{labels[0]} vs {labels[1]}", compare_outputs(results["old"], results["new"], rtol, atol, flat)))
            if "reference" in results:
                out.append(Comparison(method, name, f"reference vs {labels[0]}", compare_outputs(results["reference"], results["old"], rtol, atol)))
                out.append(Comparison(method, name, f"reference vs {labels[1]}", compare_outputs(results["reference"], results["new"], rtol, atol, flat)))
    return out


def open_new(new: str, dev: torch.device, requested: str) -> tuple[Any, dict[str, Any], dict[str, Any], list[str]]:
    """(runner, programs, meta, notes) for a new artifact: a .pt2 program archive, an AOTInductor
    package or a .pte, told apart by their contents."""
    kind = artifact_kind(new) if Path(new).suffix.lower() != ".pte" else "pte"
    notes: list[str] = []
    if kind == "pte":
        if dev.type != "cpu":
            notes.append(f"the .pte runs on cpu through executorch.runtime; the TorchScript model runs on {dev}")
        return PteRunner(new), {}, {}, notes
    if kind == "aoti":
        from ts2export.artifact.package import AotiRunner

        runner = AotiRunner(new, requested)
        if runner.device != dev:
            notes.append(f"the AOTInductor package runs on {runner.device}, the device it was compiled for; the TorchScript model runs on {dev}")
        return runner, {}, runner.meta, notes
    programs, meta = load_pt2(new)
    return ProgramRunner(programs, dev), programs, meta, notes


def verify(
    old: str,
    new: str,
    specs: Sequence[str] = (),
    inputs_file: str | None = None,
    device: str = "auto",
    samples: int = 3,
    rtol: float | None = None,
    atol: float | None = None,
    seed: int = 0,
    reference: str | None = None,
    methods: Sequence[str] = (),
    benchmark_runs: int = 0,
    warmup: int = 5,
    graph: bool = False,
) -> VerifyReport:
    """Compare OLD (TorchScript) with NEW (.pt2, AOTInductor package or .pte). The TorchScript
    module runs where it must (devices.choose_device); `benchmark_runs` > 0 also times both on the
    first input set of each method; `graph` replays the new program from a device graph."""
    if (rtol is None) != (atol is None):
        raise ArtifactError("give --rtol and --atol together (or neither for the dtype defaults)")
    if samples < 0:
        raise ArtifactError("--samples must be >= 0")
    if benchmark_runs < 0 or warmup < 0:
        raise ArtifactError("--runs and --warmup must be >= 0")
    if device != "auto":
        require_present(device)
    if graph:
        graph_api(require_present(device) if device != "auto" else resolve_device("auto")[0])
    seconds: dict[str, float] = {}
    t0 = time.perf_counter()
    old_runner = TorchScriptRunner(old, device)
    dev = old_runner.device
    notes = list(old_runner.notes)
    seconds["load_old"] = time.perf_counter() - t0
    t0 = time.perf_counter()
    new_runner, programs, meta, new_notes = open_new(new, dev, device)
    notes += new_notes
    seconds["load_new"] = time.perf_counter() - t0
    if graph:
        if not isinstance(new_runner, ProgramRunner):
            raise ArtifactError(f"--graph captures a .pt2 program; {new} is a {new_runner.kind} artifact")
        graph_api(dev)
    ref_runner = ReferenceRunner(reference, dev) if reference else None
    wanted = list(methods) or [m for m in new_runner.methods if m in old_runner.methods]
    if not wanted:
        raise ArtifactError(
            f"no method in common: old has {', '.join(old_runner.methods)}, new has {', '.join(new_runner.methods)}"
        )
    for m in wanted:
        if m not in old_runner.methods or m not in new_runner.methods:
            raise ArtifactError(f"method {m!r} is not in both artifacts")
    comparisons: list[Comparison] = []
    benchmarks: list[Benchmark] = []
    graph_run: GraphRun | None = None
    t0 = time.perf_counter()
    flat = isinstance(new_runner, PteRunner)
    for m in wanted:
        method_specs = specs_for(m, specs, wanted)
        described = new_runner.described(m) if hasattr(new_runner, "described") else None
        if described is not None:
            described = Described(*described)
        sets = input_sets_for(
            m, programs.get(m), meta, method_specs, inputs_file, samples, seed,
            params=old_runner.params(m), described=described,
        )
        runners = {"old": old_runner, "new": new_runner}
        if ref_runner is not None:
            runners["reference"] = ref_runner
        comparisons.extend(compare_runs(m, sets, runners, rtol, atol, flat))
        if graph:
            replayed, graph_run = graph_replays(m, sets, new_runner)
            by_name = {name: (args, kwargs) for name, args, kwargs in sets}
            with torch.inference_mode():
                for name, got in replayed:
                    args, kwargs = by_name[name]
                    expected = _run(old_runner, "old", m, name, args, kwargs)
                    comparisons.append(Comparison(m, name, "old vs new (graph replay)", compare_outputs(expected, got, rtol, atol)))
        if benchmark_runs:
            benchmarks.append(benchmark(m, sets[0], old_runner, new_runner, warmup, benchmark_runs))
    seconds["run_compare"] = time.perf_counter() - t0
    return VerifyReport(str(old), str(new), str(dev), notes, comparisons, seconds, benchmarks, graph_run)


def verify_pte_against_program(
    pt2: str,
    pte: str,
    samples: int = 3,
    seed: int = 0,
    rtol: float | None = None,
    atol: float | None = None,
) -> VerifyReport:
    """`lower --verify`: the .pte (executorch.runtime, CPU) against the .pt2 on the same inputs."""
    programs, meta = load_pt2(pt2)
    ref = ProgramRunner(programs, torch.device("cpu"))
    runner = PteRunner(pte, {m: ep.call_spec.out_spec for m, ep in programs.items()})
    comparisons = []
    t0 = time.perf_counter()
    for m in programs:
        sets = input_sets_for(m, programs[m], meta, (), None, samples, seed, runner.planned_sizes(m))
        comparisons.extend(compare_runs(m, sets, {"old": ref, "new": runner}, rtol, atol, False, ("pt2", "pte")))
    return VerifyReport(str(pt2), str(pte), "cpu", [], comparisons, {"run_compare": time.perf_counter() - t0})


def verify_package_against_program(
    pt2: str,
    pkg: str,
    samples: int = 3,
    seed: int = 0,
    rtol: float | None = None,
    atol: float | None = None,
) -> VerifyReport:
    """`package --verify`: the AOTInductor package (on the device it was compiled for) against the
    .pt2 (on the same device) on the .pt2's stored and generated inputs."""
    from ts2export.artifact.package import AotiRunner

    runner = AotiRunner(pkg)
    programs, meta = load_pt2(pt2)
    ref = ProgramRunner(programs, runner.device)
    comparisons = []
    t0 = time.perf_counter()
    for m in runner.methods:
        if m not in programs:
            raise ArtifactError(f"{pkg} holds {m}, which {pt2} does not")
        sets = input_sets_for(m, programs[m], meta, (), None, samples, seed)
        comparisons.extend(compare_runs(m, sets, {"old": ref, "new": runner}, rtol, atol, False, ("pt2", "package")))
    return VerifyReport(str(pt2), str(pkg), str(runner.device), [], comparisons, {"run_compare": time.perf_counter() - t0})
