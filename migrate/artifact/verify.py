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
from ts2export.artifact.loading import (
    load_inputs_file,
    load_pt2,
    load_reference,
    load_torchscript,
    resolve_device,
    script_methods,
)
from ts2export.artifact.specs import DEFAULT_DIM_CAP, Signature, parse_specs, signature_from_program, specs_for

InputSet = tuple[str, tuple[Any, ...], dict[str, Any]]


# ---- runners ---------------------------------------------------------------------------------------------


class TorchScriptRunner:
    kind = "torchscript"

    def __init__(self, path: str, device: torch.device) -> None:
        self.device = device
        self.module = load_torchscript(path, device)
        self.module.eval()
        self.methods = script_methods(self.module)

    def __call__(self, method: str, args: tuple[Any, ...], kwargs: dict[str, Any]) -> Any:
        return getattr(self.module, method)(*args, **kwargs)


class ProgramRunner:
    kind = "pt2"

    def __init__(self, programs: dict[str, Any], device: torch.device) -> None:
        from torch.export.passes import move_to_device_pass

        self.device = device
        self.programs = programs
        self.modules = {}
        for name, ep in programs.items():
            if device.type != "cpu":
                ep = move_to_device_pass(ep, device)
            self.modules[name] = ep.module()
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


def input_sets_for(
    method: str,
    program: Any | None,
    meta: dict[str, Any],
    specs: Sequence[str],
    inputs_file: str | None,
    samples: int,
    seed: int,
    size_limits: Sequence[Sequence[int]] | None = None,
) -> list[InputSet]:
    """Stored example inputs and generated samples (from the program's specs, or the user's).
    `size_limits` (per flat input, per dim) caps the dynamic dims, e.g. at a .pte's planned sizes."""
    if specs and inputs_file:
        raise ArtifactError("give --input or --inputs, not both")
    prog_sig = None
    if program is not None:
        recorded = meta.get("methods", {}).get(method) or {}
        prog_sig = signature_from_program(program, recorded.get("value_ranges"), recorded.get("specs"))
        if size_limits is not None:
            prog_sig.limit_dims(size_limits)
    sets: list[InputSet] = []
    if inputs_file:
        args = load_inputs_file(inputs_file)
        sets.append(("file", args, {}))
    elif specs:
        user_sig = parse_specs(specs)
        sets.extend(generated_sets(user_sig, max(samples, 1), seed))
    else:
        if program is None:
            raise ArtifactError("a .pte keeps no input specs; pass --input SPEC ... or --inputs FILE")
        if program.example_inputs is not None:
            args, kwargs = program.example_inputs
            sets.append(("example", tuple(args), dict(kwargs)))
        sets.extend(generated_sets(prog_sig, samples, seed, in_spec=program.call_spec.in_spec))
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
) -> VerifyReport:
    if (rtol is None) != (atol is None):
        raise ArtifactError("give --rtol and --atol together (or neither for the dtype defaults)")
    if samples < 0:
        raise ArtifactError("--samples must be >= 0")
    dev, note = resolve_device(device)
    notes = [note] if note else []
    seconds: dict[str, float] = {}
    t0 = time.perf_counter()
    old_runner = TorchScriptRunner(old, dev)
    seconds["load_old"] = time.perf_counter() - t0
    suffix = Path(new).suffix.lower()
    t0 = time.perf_counter()
    programs: dict[str, Any] = {}
    meta: dict[str, Any] = {}
    if suffix == ".pte":
        new_runner: Any = PteRunner(new)
        if dev.type != "cpu":
            notes.append(f"the .pte runs on cpu through executorch.runtime; the TorchScript model runs on {dev}")
    else:
        programs, meta = load_pt2(new)
        new_runner = ProgramRunner(programs, dev)
    seconds["load_new"] = time.perf_counter() - t0
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
    t0 = time.perf_counter()
    flat = isinstance(new_runner, PteRunner)
    for m in wanted:
        method_specs = specs_for(m, specs, wanted)
        sets = input_sets_for(m, programs.get(m), meta, method_specs, inputs_file, samples, seed)
        runners = {"old": old_runner, "new": new_runner}
        if ref_runner is not None:
            runners["reference"] = ref_runner
        comparisons.extend(compare_runs(m, sets, runners, rtol, atol, flat))
    seconds["run_compare"] = time.perf_counter() - t0
    return VerifyReport(str(old), str(new), str(dev), notes, comparisons, seconds)


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
