"""ExportedProgram (.pt2) -> ExecuTorch program (.pte), optionally bundled with test cases."""

from __future__ import annotations

import dataclasses
from pathlib import Path
from typing import Any

import torch
import torch.utils._pytree as pytree

from ts2export.artifact.devices import move_program
from ts2export.artifact.errors import ArtifactError, one_line
from ts2export.artifact.fsutil import native_stderr_silenced, write_bytes_atomic
from ts2export.artifact.loading import detach_state, load_pt2

INSTALL_HINT = "lowering needs executorch: pip install 'ts2export[edge]'"
BACKENDS = ("xnnpack", "portable")


@dataclasses.dataclass
class MethodDelegation:
    method: str
    delegated: int
    not_delegated: int
    fallback_ops: dict[str, int]  # op -> count left to portable kernels
    decomposed_control_flow: bool
    folded_float8: bool = False
    control_flow_ops: int = 0  # torch.cond / while_loop nodes in the program
    planned_limits: dict[str, int] = dataclasses.field(default_factory=dict)  # unbounded dim -> planned max

    @property
    def share(self) -> float:
        total = self.delegated + self.not_delegated
        return self.delegated / total if total else 0.0


@dataclasses.dataclass
class LowerReport:
    source: str
    output: str
    backend: str
    size_bytes: int
    methods: list[MethodDelegation]
    bundle: str | None = None
    bundle_cases: int = 0

    def to_dict(self) -> dict[str, Any]:
        d = dataclasses.asdict(self)
        for m, dm in zip(d["methods"], self.methods):
            m["share"] = round(dm.share, 4)
        return d

    def to_text(self) -> str:
        lines = [f"wrote {self.output} ({self.size_bytes / 1024:.1f} KiB, backend {self.backend})"]
        for m in self.methods:
            total = m.delegated + m.not_delegated
            line = f"  {m.method}: {m.delegated}/{total} ops delegated ({100 * m.share:.0f}%)"
            if m.fallback_ops:
                ops = ", ".join(f"{op} x{n}" for op, n in sorted(m.fallback_ops.items()))
                line += f"; portable kernels: {ops}"
            if m.decomposed_control_flow:
                line += "; control flow decomposed first"
            if m.control_flow_ops > 1:
                line += (
                    f"\n  warning: {m.method} holds {m.control_flow_ops} torch.cond/while_loop; ExecuTorch 1.5.1 can compute "
                    "wrong numbers for several in sequence (no error): check the .pte with --verify"
                )
            if m.folded_float8:
                line += "; float8 weights folded to float32 constants"
            lines.append(line)
            for dim, top in sorted(m.planned_limits.items()):
                lines.append(
                    f"  note: {m.method} dim {dim} has no upper bound; the .pte plans memory for at most {top} "
                    f"(give it one: --input ...{dim}=MIN..MAX)"
                )
        if self.bundle:
            lines.append(f"wrote bundle {self.bundle} ({self.bundle_cases} test case(s), checked by the runtime)")
        return "\n".join(lines)


def _control_flow_ops(ep: Any) -> int:
    hops = {torch.ops.higher_order.cond, torch.ops.higher_order.while_loop}
    return sum(n.op == "call_function" and n.target in hops for gm in ep.graph_module.modules() if isinstance(gm, torch.fx.GraphModule) for n in gm.graph.nodes)


def _float8_state(ep: Any) -> bool:
    tensors = list(ep.state_dict.values()) + list(ep.constants.values())
    return any(isinstance(t, torch.Tensor) and t.dtype.is_floating_point and t.dtype.itemsize == 1 for t in tensors)


def _fold_float8(ep: Any) -> Any:
    """ExecuTorch has no float8 kernels: fold dequantisation of float8 weights/scales (MX block
    scales included) into float32 constants, dropping the now unused float8 buffers."""
    from executorch.exir.passes.constant_prop_pass import constant_prop_pass

    ep = constant_prop_pass(ep)
    for node in list(ep.graph.nodes):
        if node.op == "call_function" and node.target == torch.ops.aten._assert_tensor_metadata.default:
            ep.graph.erase_node(node)
    ep.graph_module.recompile()
    ep = constant_prop_pass(ep)
    if _float8_state(ep):
        raise ArtifactError(
            "the program uses float8 tensors at run time (not only as constant weights); ExecuTorch has no float8 kernels"
        )
    return ep


def _import_executorch() -> dict[str, Any]:
    try:
        from executorch.backends.xnnpack.partition.xnnpack_partitioner import XnnpackPartitioner
        from executorch.devtools.backend_debug import get_delegation_info
        from executorch.exir import to_edge_transform_and_lower
    except ImportError:
        raise ArtifactError(INSTALL_HINT) from None
    return {
        "XnnpackPartitioner": XnnpackPartitioner,
        "get_delegation_info": get_delegation_info,
        "to_edge_transform_and_lower": to_edge_transform_and_lower,
    }


def lower(
    pt2: str,
    out: str,
    backend: str = "xnnpack",
    bundle: bool = False,
    samples: int = 3,
    seed: int = 0,
) -> LowerReport:
    if backend not in BACKENDS:
        raise ArtifactError(f"unknown backend {backend!r} (use {' or '.join(BACKENDS)})")
    et_mods = _import_executorch()
    programs, meta = load_pt2(pt2)
    decomposed = {}
    hop_count = {}
    folded = {}
    prepared = {}
    for name, ep in list(programs.items()):
        # ExecuTorch runs on CPU: a program converted on an accelerator is moved first
        ep = programs[name] = move_program(detach_state(ep), "cpu")
        hop_count[name] = _control_flow_ops(ep)
        decomposed[name] = hop_count[name] > 0
        ep = ep.run_decompositions() if decomposed[name] else ep
        folded[name] = _float8_state(ep)
        prepared[name] = _fold_float8(ep) if folded[name] else ep
    partitioner = [et_mods["XnnpackPartitioner"]()] if backend == "xnnpack" else None
    try:
        edge = et_mods["to_edge_transform_and_lower"](prepared, partitioner=partitioner)
    except Exception as exc:
        raise ArtifactError(f"cannot lower {pt2}: {one_line(exc)}") from None
    methods = []
    for name in programs:
        info = et_mods["get_delegation_info"](edge.exported_program(name).graph_module)
        fallback = {
            op: b.non_delegated
            for op, b in info.delegation_by_operator.items()
            if b.non_delegated and op != "getitem"
        }
        not_delegated = sum(fallback.values())
        methods.append(
            MethodDelegation(name, info.num_delegated_nodes, not_delegated, fallback, decomposed[name], folded[name], control_flow_ops=hop_count[name])
        )
    try:
        et = edge.to_executorch()
    except Exception as exc:
        raise ArtifactError(f"cannot lower {pt2}: {one_line(exc)}") from None
    buffer = et.buffer
    planned = _note_planned_limits(buffer, programs, meta, methods)
    write_bytes_atomic(out, buffer)
    report = LowerReport(str(pt2), str(out), backend, len(buffer), methods)
    if bundle:
        report.bundle, report.bundle_cases = _write_bundle(et, programs, meta, Path(out), samples, seed, planned)
    return report


def _note_planned_limits(
    buffer: bytes, programs: dict[str, Any], meta: dict[str, Any], methods: list[MethodDelegation]
) -> dict[str, list[list[int]]]:
    """Dims without an upper bound get one from ExecuTorch's memory planning: record it. Returns
    the planned input sizes per method."""
    from executorch.runtime import Runtime

    from ts2export.artifact.specs import signature_from_program

    with native_stderr_silenced():
        program = Runtime.get().load_program(buffer)
    planned = {}
    for report in methods:
        mm = program.metadata(report.method)
        planned[report.method] = limits = [list(mm.input_tensor_meta(i).sizes()) for i in range(mm.num_inputs())]
        recorded = meta.get("methods", {}).get(report.method) or {}
        sig = signature_from_program(programs[report.method], recorded.get("value_ranges"), recorded.get("specs"))
        unbounded = {name for name, (_, hi) in sig.symbols.items() if hi is None}
        if unbounded:
            changed = sig.limit_dims(limits)
            report.planned_limits = {name: top for name, top in changed.items() if name in unbounded}
    return planned


def _write_bundle(
    et: Any,
    programs: dict[str, Any],
    meta: dict[str, Any],
    out: Path,
    samples: int,
    seed: int,
    planned: dict[str, list[list[int]]],
) -> tuple[str, int]:
    """A BundledProgram (.bpte next to the .pte) with the stored and generated inputs and the
    .pt2's outputs as expected outputs; checked once through the ExecuTorch runtime."""
    from executorch.devtools import BundledProgram
    from executorch.devtools.bundled_program.config import MethodTestCase, MethodTestSuite
    from executorch.devtools.bundled_program.serialize import serialize_from_bundled_program_to_flatbuffer

    from ts2export.artifact.verify import input_sets_for

    suites = []
    count = 0
    with torch.inference_mode():
        for name, ep in programs.items():
            module = ep.module()
            cases = []
            for _, args, kwargs in input_sets_for(name, ep, meta, (), None, samples, seed, planned[name]):
                expected = pytree.tree_leaves(module(*args, **kwargs))
                flat_inputs = [t.contiguous() for t in pytree.tree_leaves((args, kwargs))]
                cases.append(MethodTestCase(inputs=flat_inputs, expected_outputs=[t.clone() for t in expected]))
            suites.append(MethodTestSuite(method_name=name, test_cases=cases))
            count += len(cases)
    try:
        buf = serialize_from_bundled_program_to_flatbuffer(BundledProgram(et, suites))
    except Exception as exc:
        raise ArtifactError(f"cannot build the bundled program: {one_line(exc)}") from None
    _check_bundle(buf, suites)
    path = out.with_suffix(".bpte")
    write_bytes_atomic(path, buf)
    return str(path), count


def _check_bundle(buf: bytes, suites: list[Any]) -> None:
    with native_stderr_silenced():
        _run_bundle(buf, suites)


def _run_bundle(buf: bytes, suites: list[Any]) -> None:
    from executorch.extension.pybindings.portable_lib import _load_bundled_program_from_buffer

    from ts2export.artifact.compare import tolerances

    bundle = _load_bundled_program_from_buffer(buf)
    for suite in suites:
        for i, case in enumerate(suite.test_cases):
            dtypes = [t.dtype for t in case.expected_outputs if isinstance(t, torch.Tensor)]
            rtol = max([tolerances(d)[0] for d in dtypes] + [1e-5])
            atol = max([tolerances(d)[1] for d in dtypes] + [1e-8])
            try:
                bundle.verify_result_with_bundled_expected_output(suite.method_name, i, rtol, atol)
            except Exception as exc:
                raise ArtifactError(
                    f"bundled test case {i} of {suite.method_name} fails in the ExecuTorch runtime: {one_line(exc)}"
                ) from None
