"""What the module given to ``script``/``trace`` is: its class in this file, its
``@torch.jit.export`` methods, its kind (module, function, class), whether it is a
``ScriptModule`` subclass instance, its recurrent layers, and why it cannot be exported."""

from __future__ import annotations

import libcst as cst

from ts2export.model.callsites.bindings import assigned_value, definition
from ts2export.model.callsites.syntax import Asker, REBIND_METHODS, RNN_LAYERS, code, shown
from ts2export.model.known_errors import KNOWN


def model_class(rule: Asker, model: cst.BaseExpression) -> cst.ClassDef | None:
    """The class (defined in this file) of ``Model(...)`` or of a name bound to it (``.eval()`` allowed)."""
    expr = model
    for _ in range(6):
        if isinstance(expr, cst.Name):
            value = assigned_value(rule, expr)
            if value is None:
                return None
            expr = value
            continue
        if isinstance(expr, cst.Call):
            if isinstance(expr.func, cst.Attribute) and expr.func.attr.value in ("eval", "train", "to", "float", "cpu"):
                expr = expr.func.value
                continue
            if isinstance(expr.func, cst.Name):
                d = definition(rule, expr.func)
                return d if isinstance(d, cst.ClassDef) else None
        return None
    return None


def exported_methods(rule: Asker, cls: cst.ClassDef | None) -> list[str]:
    """Methods of the class marked `@torch.jit.export` that the class itself never calls: the extra
    entry points of its scripted artifact."""
    if cls is None:
        return []
    marked = []
    for stmt in cls.body.body:
        if isinstance(stmt, cst.FunctionDef) and any(rule.matches(d.decorator, "torch.jit.export") for d in stmt.decorators):
            marked.append(stmt.name.value)
    called: set[str] = set()

    class _V(cst.CSTVisitor):
        def visit_Attribute(self, node: cst.Attribute) -> None:
            if isinstance(node.value, cst.Name) and node.value.value == "self":
                called.add(node.attr.value)

    cls.body.visit(_V())
    return [m for m in marked if m not in called]


def model_kind(rule: Asker, model: cst.BaseExpression) -> str:
    """What the object given to script/trace is: "module" (an instance), "function", "class" or
    "unknown". A definition of this file answers first, then the program model (which follows
    names across files and parameters through their call sites), then a call in this file (an
    instance made by a constructor or a factory)."""
    if isinstance(model, cst.Name):
        d = definition(rule, model)
        if isinstance(d, cst.FunctionDef):
            return "function"
        if isinstance(d, cst.ClassDef):
            return "class"
    kind = rule.object_kind(model)
    if kind != "unknown":
        return kind
    expr = model
    for _ in range(6):
        if isinstance(expr, cst.Name):
            value = assigned_value(rule, expr)
            if value is None:
                break
            expr = value
            continue
        if isinstance(expr, cst.Call):
            return "module"
        break
    return "unknown"


def script_module_instance(rule: Asker, expr: cst.BaseExpression) -> str | None:
    """The name of the ``torch.jit.ScriptModule`` subclass whose instance ``expr`` is (a name bound
    once to ``Cls(...)``, followed through ``.eval()``-like calls), if it is one."""
    for _ in range(6):
        if isinstance(expr, cst.Name):
            value = assigned_value(rule, expr)
            if value is None:
                return None
            expr = value
            continue
        if isinstance(expr, cst.Call) and isinstance(expr.func, cst.Attribute) and expr.func.attr.value in REBIND_METHODS:
            expr = expr.func.value
            continue
        break
    if not isinstance(expr, cst.Call):
        return None
    for name in sorted(rule.qualnames(expr.func)):
        if rule.context.program.kind_of(name) == "script-module-class":
            return code(expr.func)
    if isinstance(expr.func, cst.Name):
        d = definition(rule, expr.func)
        if isinstance(d, cst.ClassDef) and any(rule.matches(b.value, "torch.jit.ScriptModule") for b in d.bases):
            return code(expr.func)
    return None


def is_function(rule: Asker, model: cst.BaseExpression) -> bool:
    return model_kind(rule, model) == "function"


def recurrent_layers(rule: Asker, cls: cst.ClassDef | None, seen: set | None = None) -> list[str]:
    """Names of nn.GRU/LSTM/RNN layers built in the class (or in classes of this file it builds)."""
    if cls is None:
        return []
    seen = seen if seen is not None else set()
    if id(cls) in seen:
        return []
    seen.add(id(cls))
    found: list[str] = []
    calls: list[cst.Call] = []

    class _V(cst.CSTVisitor):
        def visit_Call(self, node: cst.Call) -> None:
            calls.append(node)

    cls.body.visit(_V())
    for c in calls:
        q = rule.matches(c.func, *RNN_LAYERS)
        if q:
            found.append(q.rsplit(".", 1)[-1])
        elif isinstance(c.func, cst.Name):
            d = definition(rule, c.func)
            if isinstance(d, cst.ClassDef):
                found.extend(recurrent_layers(rule, d, seen))
    return found


#: Eager-mode quantization: what it returns holds packed weights (TorchScript custom classes).
QUANTIZERS = ("torch.ao.quantization.quantize_dynamic", "torch.quantization.quantize_dynamic",
              "torch.ao.quantization.quantize", "torch.quantization.quantize", "torch.ao.quantization.convert",
              "torch.quantization.convert", "torch.ao.quantization.quantize_qat", "torch.quantization.quantize_qat")


def _quantized_by(rule: Asker, model: cst.BaseExpression) -> str | None:
    """The eager-mode quantization call that made ``model`` (followed through names and
    ``.eval()``-like calls), if one did."""
    expr = model
    for _ in range(6):
        if isinstance(expr, cst.Name):
            expr = assigned_value(rule, expr)
        elif isinstance(expr, cst.Call) and isinstance(expr.func, cst.Attribute) and expr.func.attr.value in REBIND_METHODS:
            expr = expr.func.value
        elif isinstance(expr, cst.Call):
            return rule.matches(expr.func, *QUANTIZERS) or None
        else:
            return None
    return None


def model_problem(rule: Asker, model: cst.BaseExpression, verb: str, functions: bool = False) -> str | None:
    kind = model_kind(rule, model)
    if kind == "unknown":
        return (f"ts2export cannot tell whether `{shown(model)}` is a module or a function (it is bound to both, or its "
                "value is not visible in the checked files: a parameter that nothing calls, a value built at run time), "
                "and torch.export.export takes a module only; if it is always an nn.Module, annotate it "
                "(`model: torch.nn.Module`) or check the files that call this code together")
    if kind == "class":
        return f"`{shown(model)}` is a class, not a module instance: {verb} an instance"
    if kind == "function" and not functions:
        return (f"`{shown(model)}` is a function: torch.export.export wants an nn.Module; wrap it "
                f"(`class {shown(model).title().replace('_', '')}(torch.nn.Module): def forward(self, *a): return {shown(model)}(*a)`) and {verb} the module")
    quantizer = _quantized_by(rule, model)
    if quantizer is not None:
        known = next(k for k in KNOWN if k.key == "quantized-modules")
        return (f"`{shown(model)}` is made by `{quantizer}(...)`: {known.sentence} (verified with torch 2.13: "
                f"`CellParamsBase ... does not have a field with name '__obj_flatten__'`); see {known.see}")
    layers = recurrent_layers(rule, model_class(rule, model))
    call = rule.parent(rule.parent(model))
    if isinstance(call, cst.Call):
        defs = rule.enclosing_defs(call)
        texts = rule.context.program.string_inputs_of(defs[0] if defs else "", code(call))
        if texts:
            return (f"the forward of `{shown(model)}` takes strings ({texts[0]}): torch.export takes tensors, and a "
                    "string input becomes the example's value (verified with torch 2.13: the exported program accepts "
                    "only the example's strings, `Guard failed: texts[0] == '...'`, and only their number); export "
                    "the tensor module it calls (the core after tokenizing) and keep the string handling in Python "
                    "beside it, then replace this call by hand")
        packing = rule.context.program.packed_in(defs[0] if defs else "", code(call))
        if packing:
            return (f"the forward of `{shown(model)}` packs its batch for a recurrent layer ({packing[0]}): torch.export "
                    "cannot trace nn.GRU / LSTM / RNN run on a PackedSequence, at any shape (verified with torch 2.13: "
                    "non-strict fails inside the layer, `zeros(): argument 'size' failed to unpack ... got FakeTensor`, "
                    "strict stops at `pack_padded_sequence`, `Attempted to call function marked as skipped`); run the "
                    "layer on the padded batch instead (the backward direction reversed within each length) and "
                    "check the outputs, then replace this call by hand")
    if not layers and isinstance(call, cst.Call):
        defs = rule.enclosing_defs(call)
        layers = list(rule.context.program.recurrent_in(defs[0] if defs else "", code(call)))
    if layers:
        return (f"`{shown(model)}` holds {', '.join('nn.' + x for x in sorted(set(layers)))}: torch.export specializes the sequence length "
                f"of recurrent layers (verified with torch 2.13: `Guard failed: x.size()[1] == 5`), while the "
                f"TorchScript artifact accepted any length; export once per sequence length you serve, or pad "
                f"inputs to one length, and then replace this call by hand")
    if isinstance(call, cst.Call):
        defs = rule.enclosing_defs(call)
        decided = rule.context.program.data_sizes_in(defs[0] if defs else "", code(call))
        if decided:
            took = "took it at run time" if verb == "script" else "had baked the example's decision in"
            return (f"`{shown(model)}` decides in Python on a size that depends on the values of its data "
                    f"({decided[0]}, a tensor made by `nonzero`, a boolean mask, `unique`, ...): torch.export "
                    f"stops there (verified with torch 2.13: `GuardOnDataDependentSymNode: Could not guard on "
                    f"data-dependent expression Eq(u0, 0)`), where TorchScript {took}; compute without the "
                    "decision (a fixed-size result, padding, `torch.cond`) and check the outputs, then replace "
                    "this call by hand")
    if isinstance(call, cst.Call):
        defs = rule.enclosing_defs(call)
        branches = rule.context.program.size_branches_in(defs[0] if defs else "", code(call))
        if branches:
            then = ("took the other branch at other sizes" if verb == "script" else
                    "had baked the example's branch in and ran it at every size")
            return (f"the forward of `{shown(model)}` branches in Python on the size of an input ({branches[0]}): the export "
                    f"keeps the branch its example takes and guards the size (verified with torch 2.13: a call at a "
                    f"size across the line raises `Guard failed: x.size()[0] <= 3`), where TorchScript {then}; write "
                    "the branch with `torch.cond` (whose predicate may read sizes) and check the outputs, then replace "
                    "this call by hand")
    return None
