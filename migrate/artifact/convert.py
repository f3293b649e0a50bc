"""TorchScript (.pt) -> ExportedProgram(s) in one .pt2.

Two strategies per method (``torch.jit.fork``/``wait`` are inlined first):

* ``TS2EPConverter``: translates the TorchScript graph node by node; turns a scripted ``if`` on a
  tensor into ``torch.cond``. Its retrace step is given the user's dynamic dims instead of making
  every dim dynamic. It converts forward only; other methods reach it through a scripted shim.
* ``interpreter``: ``torch.export.export`` (non-strict) of a small nn.Module that calls the loaded
  ScriptModule. The TorchScript interpreter runs on fake tensors and every aten op it dispatches is
  recorded. This handles loops (unrolled for the given sizes), ``Optional`` inputs and script-class
  attributes, but not branches on tensor values.

forward tries the converter first, other methods the interpreter first. A result is kept only if it
reproduces the TorchScript outputs on the example inputs; otherwise the next strategy is tried. When
none works the error names the TorchScript node kind and the way out.
"""

from __future__ import annotations

import contextlib
import dataclasses
import io
import re
import time
from collections.abc import Sequence
from typing import Any

import torch
import torch.utils._pytree as pytree

from ts2export.artifact.compare import compare_outputs, normalize
from ts2export.artifact.errors import ArtifactError, one_line
from ts2export.artifact.devices import move_program, require_present
from ts2export.artifact.inputs import bind_inputs, flat_tensors, load_inputs_file
from ts2export.artifact.loading import detach_state, open_torchscript, save_pt2, script_methods
from ts2export.artifact.specs import Signature, parse_specs, spec_from_tensors, specs_for, split_specs

NODE_HINTS = {
    "prim::Loop": "a loop whose trip count is not a constant",
    "prim::unchecked_cast": "an Optional input or value",
    "prim::fork": "torch.jit.fork",
    "aten::wait": "torch.jit.wait",
    "prim::GetAttr": "an attribute of a TorchScript class",
    "prim::CreateObject": "a TorchScript class instance",
    "prim::CallMethod": "a method of a TorchScript class",
    "aten::to_mkldnn": "an optimize_for_inference (MKLDNN) artifact",
    "prim::RaiseException": "a raise statement",
}


@dataclasses.dataclass
class MethodReport:
    method: str
    strategy: str
    inputs: list[str]
    seconds: float
    notes: list[str]


@dataclasses.dataclass
class ConvertReport:
    source: str
    output: str
    available: list[str]
    methods: list[MethodReport]
    device: str = "cpu"  # where the TorchScript module ran and was converted
    saved_on: str = "cpu"  # where the saved programs' tensors are (--to-device)
    notes: list[str] = dataclasses.field(default_factory=list)


def _schema_args(sm: torch.jit.ScriptModule, method: str) -> list[Any]:
    return list(getattr(sm, method).schema.arguments)[1:]  # drop self


def _schema_text(sm: torch.jit.ScriptModule, method: str) -> str:
    args = ", ".join(f"{a.name}: {a.type}" for a in _schema_args(sm, method))
    return f"{method}({args})"


class _Converter:
    """TS2EPConverter with the retrace step given our dynamic_shapes. The converter hard-codes
    Dim.AUTO for every dim in its call to torch.export._trace._export; that call is redirected for
    the duration of the retrace (process-global, so conversions must not run concurrently)."""

    @staticmethod
    def run(sm: torch.jit.ScriptModule, args: tuple[Any, ...], dynamic_shapes: Any) -> Any:
        from torch._export.converter import TS2EPConverter

        class Conv(TS2EPConverter):
            def retrace_as_exported_program(self, gm, name_to_constant):
                orig = torch.export._trace._export

                def _export(mod, a, *rest, **kw):
                    kw["dynamic_shapes"] = dynamic_shapes
                    return orig(mod, a, *rest, **kw)

                torch.export._trace._export = _export
                try:
                    return super().retrace_as_exported_program(gm, name_to_constant)
                finally:
                    torch.export._trace._export = orig

        return Conv(sm, args).convert()


_SHIM_SOURCE = """import torch
from typing import Any, Dict, List, Optional, Tuple
from torch import Tensor


class MethodShim(torch.nn.Module):
    def __init__(self, inner):
        super().__init__()
        self.inner = inner

    def forward(self, {params}):
        return self.inner.{method}({call})
"""


def _method_as_forward(sm: torch.jit.ScriptModule, method: str, given: int) -> torch.jit.ScriptModule:
    """A scripted module whose forward calls `sm.<method>` with the first `given` arguments (the
    rest keep their defaults), so TS2EPConverter (forward only) can convert an exported method.
    Its state_dict keys carry the prefix `inner.`."""
    import importlib.util
    import tempfile
    from pathlib import Path

    args = _schema_args(sm, method)[:given]
    params = [f"{a.name}: {a.type}" for a in args]
    source = _SHIM_SOURCE.format(params=", ".join(params), method=method, call=", ".join(a.name for a in args))
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / f"ts2export_shim_{method}.py"
        path.write_text(source, encoding="utf-8")
        spec = importlib.util.spec_from_file_location(path.stem, path)
        module = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(module)
        return torch.jit.script(module.MethodShim(sm))


class _CallScript(torch.nn.Module):
    """Calls a ScriptModule method. The ScriptModule's parameters and buffers are registered here
    under the same names (so torch.export lifts them as real parameters and the program's
    state_dict keys match the TorchScript ones) and written into the ScriptModule before each call."""

    def __init__(self, sm: torch.jit.ScriptModule, method: str) -> None:
        super().__init__()
        object.__setattr__(self, "_sm", sm)
        object.__setattr__(self, "_method", method)
        object.__setattr__(self, "_slots", [])
        for name, p in sm.named_parameters():
            owner, leaf = self._holder(name)
            owner.register_parameter(leaf, torch.nn.Parameter(p.detach(), requires_grad=False))
            self._slots.append(name)
        for name, b in sm.named_buffers():
            owner, leaf = self._holder(name)
            owner.register_buffer(leaf, b)
            self._slots.append(name)

    def _holder(self, name: str) -> tuple[torch.nn.Module, str]:
        *path, leaf = name.split(".")
        mod: torch.nn.Module = self
        for part in path:
            if part not in mod._modules:
                mod.add_module(part, torch.nn.Module())
            mod = mod._modules[part]
        return mod, leaf

    def _set(self, name: str, value: torch.Tensor) -> None:
        *path, leaf = name.split(".")
        owner = self._sm
        for part in path:
            owner = getattr(owner, part)
        owner._c.setattr(leaf, value)

    def forward(self, *args: Any) -> Any:
        self.restore()
        return getattr(self._sm, self._method)(*args)

    def restore(self) -> None:
        state = dict(self.named_parameters())
        state.update(self.named_buffers())
        for name in self._slots:
            self._set(name, state[name])


def _export_interpreter(sm: torch.jit.ScriptModule, method: str, args: tuple[Any, ...], dynamic_shapes: Any) -> Any:
    wrapper = _CallScript(sm, method)
    try:
        # The optimizing graph executor specializes on the shapes it profiles; the plain interpreter
        # keeps the dynamic dims symbolic.
        with torch.jit.optimized_execution(False):
            return torch.export.export(wrapper, args, dynamic_shapes=(dynamic_shapes,) if dynamic_shapes else None)
    finally:
        wrapper.restore()  # export leaves fake tensors in the ScriptModule's slots


def _node_kind(message: str) -> str | None:
    m = re.search(r"\b((?:prim|aten|quantized)::[A-Za-z_]+)", message)
    return m.group(1) if m else None


def _explain(method: str, errors: list[tuple[str, str]], sig: Signature) -> str:
    kind = None
    for _, msg in errors:
        kind = kind or _node_kind(msg)
    last = errors[-1][1] if errors else "unknown failure"
    if "specialized it to be a constant" in last or "Constraints violated" in last:
        names = ", ".join(sig.symbols) or "a dynamic dim"
        return (
            f"cannot convert {method}: the TorchScript code fixes the size of {names} (e.g. a loop over it); "
            "give that dim a static size in --input, or migrate the source with `ts2export apply`"
        )
    if "data-dependent" in last.lower() or "GuardOnDataDependent" in last:
        what = f"node {kind}" if kind else "the graph"
        return (
            f"cannot convert {method}: {what} not supported by TS2EPConverter and the code branches or loops "
            "on tensor values; migrate the source with `ts2export apply` (torch.cond / while_loop)"
        )
    if kind:
        hint = NODE_HINTS.get(kind, "a construct")
        return (
            f"cannot convert {method}: TorchScript node {kind} ({hint}) is not supported; "
            f"migrate the source with `ts2export apply` and export the eager model ({one_line(last, 160)})"
        )
    return f"cannot convert {method}: {one_line(last, 200)}; migrate the source with `ts2export apply`"


def _as_tuples(tree: Any) -> Any:
    if isinstance(tree, (list, tuple)) and not hasattr(tree, "_fields"):
        return tuple(_as_tuples(v) for v in tree)
    if isinstance(tree, dict):
        return {k: _as_tuples(v) for k, v in tree.items()}
    return tree


def _restore_output_structure(ep: Any, expected: Any) -> None:
    """TS2EPConverter returns TorchScript tuples as lists; give the program the TorchScript output
    structure back when the two differ only in list vs tuple."""
    want = pytree.tree_structure(normalize(expected))
    have = ep.call_spec.out_spec
    if have is None or want == have or want.num_leaves != have.num_leaves:
        return
    dummy = list(range(want.num_leaves))
    if pytree.tree_structure(_as_tuples(pytree.tree_unflatten(dummy, want))) == pytree.tree_structure(
        _as_tuples(pytree.tree_unflatten(dummy, have))
    ):
        ep.module_call_graph[0].signature.out_spec = want


def _matches(sm: torch.jit.ScriptModule, method: str, ep: Any, args: tuple[Any, ...]) -> str | None:
    """None when the program reproduces the TorchScript outputs on `args`, else why not."""
    with torch.inference_mode():
        try:
            expected = getattr(sm, method)(*args)
            _restore_output_structure(ep, expected)
            got = ep.module()(*args)
        except Exception as exc:
            return one_line(exc)
    res = compare_outputs(expected, got)
    if res.ok:
        return None
    if res.structure:
        return res.structure
    bad = next(leaf for leaf in res.leaves if not leaf.ok)
    return f"output {bad.output}: {bad.detail}"


def _inline_forks(sm: torch.jit.ScriptModule, method: str) -> bool:
    """torch.jit.fork/wait -> sequential calls, in place (same results, no inter-op thread, which
    neither the converter nor export's fake tensors can follow). True if there were forks."""
    graph = getattr(sm, method).graph
    torch._C._jit_pass_inline(graph)
    if not graph.findAllNodes("prim::fork", True):
        return False
    torch._C._jit_pass_inline_fork_wait(graph)
    return True


def convert_method(
    sm: torch.jit.ScriptModule, method: str, sig: Signature, args: tuple[Any, ...]
) -> tuple[Any, str, list[str]]:
    dynamic_shapes = sig.dynamic_shapes()
    if not any(d for d in dynamic_shapes):
        dynamic_shapes = None
    notes: list[str] = []
    if _inline_forks(sm, method):
        notes.append("torch.jit.fork/wait inlined: the forked calls run in sequence")
    errors: list[tuple[str, str]] = []
    strategies = []
    if method == "forward":
        strategies.append(("TS2EPConverter", lambda: _Converter.run(sm, args, dynamic_shapes)))
        strategies.append(("interpreter", lambda: _export_interpreter(sm, method, args, dynamic_shapes)))
    else:  # the interpreter keeps the TorchScript state_dict names; the converter needs a shim
        strategies.append(("interpreter", lambda: _export_interpreter(sm, method, args, dynamic_shapes)))
        strategies.append(
            ("TS2EPConverter", lambda: _Converter.run(_method_as_forward(sm, method, len(args)), args, dynamic_shapes))
        )
    for name, fn in strategies:
        try:
            # torch prints the partial graph of a failed export to stderr; keep the one-line contract
            with contextlib.redirect_stderr(io.StringIO()), contextlib.redirect_stdout(io.StringIO()):
                ep = fn()
        except Exception as exc:
            errors.append((name, str(exc)))
            notes.append(f"{name} failed: {one_line(exc, 200)}")
            continue
        why = _matches(sm, method, ep, args)
        if why is None:
            return ep, name, notes
        errors.append((name, why))
        notes.append(f"{name} result rejected: {why}")
    raise ArtifactError(_explain(method, errors, sig))


def convert(
    old: str,
    out: str,
    specs: Sequence[str] = (),
    inputs_file: str | None = None,
    methods: Sequence[str] = (),
    seed: int = 0,
    device: str = "auto",
    to_device: str | None = None,
) -> ConvertReport:
    """Convert on the device the artifact needs (`device`, see devices.choose_device); with
    `to_device`, move the programs there (checked to reproduce the TorchScript outputs) before saving."""
    if specs and inputs_file:
        raise ArtifactError("give --input or --inputs, not both")
    target = require_present(to_device, "--to-device") if to_device else None
    sm, dev, dev_notes, needs = open_torchscript(old, device, prefer_accelerator=False)
    available = script_methods(sm)
    wanted = list(methods) or ["forward"]
    for m in wanted:
        if m not in available:
            raise ArtifactError(f"{old}: no method {m!r}; the module has: {', '.join(available)}")
    by_method = split_specs(specs)
    for key in by_method:
        if key is not None and key not in wanted:
            raise ArtifactError(f"--input {key}:...: method {key!r} is not being converted (add --method {key})")
    programs: dict[str, Any] = {}
    reports: list[MethodReport] = []
    final = target or dev
    meta: dict[str, Any] = {
        "tool": "ts2export convert", "source": str(old), "device": str(final), "converted_on": str(dev),
        "artifact_devices": needs.to_dict(), "methods": {},
    }
    for method in wanted:
        texts = specs_for(method, specs, wanted)
        schema = _schema_args(sm, method)
        if inputs_file and method == wanted[0]:
            args = bind_inputs(load_inputs_file(inputs_file), schema, method, f"{inputs_file}")
            sig = spec_from_tensors(flat_tensors(args))
        elif texts:
            sig = parse_specs(texts)
            args = tuple(sig.make(sig.example_sizes(), torch.Generator().manual_seed(seed)))
        else:
            raise ArtifactError(
                f"{method}: a saved TorchScript file keeps no input shapes; pass --input SPEC per input "
                f"(e.g. --input 'float32[B=1..8,3,32,32]') or --inputs FILE; signature: {_schema_text(sm, method)}"
            )
        required = [a for a in schema if not a.has_default_value()]
        if not len(required) <= len(args) <= len(schema):
            raise ArtifactError(
                f"{method}: got {len(args)} input(s), the module takes {len(required)}"
                + (f" to {len(schema)}" if len(schema) != len(required) else "")
                + f": {_schema_text(sm, method)}"
            )
        args = pytree.tree_map(lambda t: t.to(dev) if isinstance(t, torch.Tensor) else t, args)
        t0 = time.perf_counter()
        try:
            ep, strategy, notes = convert_method(sm, method, sig, args)
        except ArtifactError:
            pinned = [d for d in needs.pinned if d != str(dev)]
            if pinned:
                where = ", ".join(needs.pin_text(d) for d in pinned)
                raise ArtifactError(
                    f"cannot convert {method} on {dev}: the artifact's graph makes tensors on {where}; convert it on a "
                    f"machine with {torch.device(pinned[0]).type} (--device auto picks it)"
                ) from None
            raise
        ep = detach_state(ep)
        if target is not None and target != dev:
            ep = _moved(sm, method, ep, args, target)
            notes.append(f"moved from {dev} to {target} (move_to_device_pass) and checked against the TorchScript outputs")
        reports.append(MethodReport(method, strategy, sig.describe(), time.perf_counter() - t0, notes))
        programs[method] = ep
        meta["methods"][method] = {
            "strategy": strategy,
            "inputs": sig.describe(),
            "specs": list(texts) if texts and not (inputs_file and method == wanted[0]) else None,
            "value_ranges": [None if leaf.low is None else [leaf.low, leaf.high] for leaf in sig.leaves],
        }
    save_pt2(out, programs, meta)
    return ConvertReport(str(old), str(out), available, reports, str(dev), str(final), dev_notes)


def _moved(sm: torch.jit.ScriptModule, method: str, ep: Any, args: tuple[Any, ...], target: torch.device) -> Any:
    """`ep` moved to `target`; it must still reproduce the TorchScript outputs (made where the
    TorchScript module runs) on the example inputs moved there."""
    ep = move_program(ep, target)
    moved = pytree.tree_map(lambda t: t.to(target) if isinstance(t, torch.Tensor) else t, args)
    with torch.inference_mode():
        expected = getattr(sm, method)(*args)
        try:
            got = ep.module()(*moved)
        except Exception as exc:
            raise ArtifactError(f"{method}: the program moved to {target} fails: {one_line(exc)}") from None
    res = compare_outputs(expected, got)
    if not res.ok:
        why = res.structure or next(f"output {leaf.output}: {leaf.detail}" for leaf in res.leaves if not leaf.ok)
        raise ArtifactError(f"{method}: the program moved to {target} no longer matches the TorchScript outputs: {why}")
    return ep
