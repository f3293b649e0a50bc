"""Example inputs and dynamic shapes of an export: tensor shapes read from factory calls, the
``dynamic_shapes`` entry of each example tensor, hint comments and config entries, the first
call of a scripted module, a trace of the same module, a conventionally named example, and the
program model's evidence (calls elsewhere, a recording)."""

from __future__ import annotations

import re
from dataclasses import dataclass

import libcst as cst
from libcst.metadata import ScopeProvider

from ts2export.edits import Import
from ts2export.model.callsites.bindings import assigned_value, binding
from ts2export.model.callsites.syntax import Asker, TRACE, module_of, argument, code, enclosing, shown
from ts2export.model.callsites.uses import classify_use, value_expr


_FACTORIES_SIZES = {"randn", "rand", "zeros", "ones", "empty"}
_HINT = re.compile(r"#\s*ts2export:\s*inputs\s*=\s*(.+?)\s*$")


def _int(node: cst.BaseExpression | None) -> int | None:
    if isinstance(node, cst.Integer):
        return int(node.value, 0)
    return None


def _sizes_of_factory(rule: Asker, call: cst.Call, depth: int) -> tuple[int, list[int | None]] | None:
    """(rank, literal sizes or None) of a tensor made by a factory call with visible sizes."""
    q = rule.matches_prefix(call.func, "torch")
    if q is None and code(call.func).startswith("torch."):  # a detached node (hint comment)
        q = code(call.func)
    if q is None:
        # x.clone(), x.float(), ... keep the shape of x
        if isinstance(call.func, cst.Attribute) and call.func.attr.value in ("clone", "float", "double", "half", "long", "int", "contiguous", "detach", "to", "cpu"):
            return tensor_shape(rule, call.func.value, depth + 1)
        return None
    short = q.rsplit(".", 1)[-1]
    positional = [a.value for a in call.args if a.keyword is None and not a.star]
    sized = argument(call, None, "size")
    if short in _FACTORIES_SIZES or short == "full":
        if sized is not None:
            positional = [sized]
        if short == "full":
            positional = positional[:1]
        if len(positional) == 1 and isinstance(positional[0], (cst.Tuple, cst.List)):
            if any(isinstance(e, cst.StarredElement) for e in positional[0].elements):
                return None  # `(batch, *size)`: the rank is not visible (see leading_dims)
            dims = [e.value for e in positional[0].elements]
            return len(dims), [_int(d) for d in dims]
        if positional and all(not isinstance(p, (cst.Tuple, cst.List)) for p in positional):
            return len(positional), [_int(p) for p in positional]
        return None
    if short == "randint":
        size = sized if sized is not None else next((p for p in positional if isinstance(p, (cst.Tuple, cst.List))), None)
        if isinstance(size, (cst.Tuple, cst.List)) and not any(isinstance(e, cst.StarredElement) for e in size.elements):
            return len(size.elements), [_int(e.value) for e in size.elements]
        return None
    if short in ("arange", "linspace"):
        return 1, [None]
    if short in ("randn_like", "rand_like", "zeros_like", "ones_like", "empty_like"):
        inner = argument(call, 0, "input")
        return tensor_shape(rule, inner, depth + 1) if inner is not None else None
    if short == "tensor":
        data = argument(call, 0, "data")
        if not isinstance(data, (cst.List, cst.Tuple, cst.Integer, cst.Float, cst.UnaryOperation)) and not (
                isinstance(data, cst.Name) and data.value in ("True", "False")):
            return None  # `torch.tensor(json.loads(...))`, `torch.tensor(values)`: any rank
        rank, sizes = 0, []
        while isinstance(data, (cst.List, cst.Tuple)):
            rank += 1
            sizes.append(len(data.elements))
            data = data.elements[0].value if data.elements else None
        return rank, sizes
    return None


def leading_dims(expr: cst.BaseExpression) -> list[int | None]:
    """The sizes before the first starred element of a factory's size tuple (``torch.ones((b, *s))``:
    [None]; a literal size is an int), or [] when the example is not such a call."""
    if not isinstance(expr, cst.Call):
        return []
    for a in expr.args:
        size = a.value
        if a.keyword is None or a.keyword.value == "size":
            if isinstance(size, (cst.Tuple, cst.List)) and any(isinstance(e, cst.StarredElement) for e in size.elements):
                out = []
                for e in size.elements:
                    if isinstance(e, cst.StarredElement):
                        return out
                    out.append(_int(e.value))
    return []


def tensor_shape(rule: Asker, expr: cst.BaseExpression, depth: int = 0) -> tuple[int, list[int | None]] | None:
    if depth > 6 or expr is None:
        return None
    if isinstance(expr, cst.Call):
        return _sizes_of_factory(rule, expr, depth)
    if isinstance(expr, cst.Name):
        value = assigned_value(rule, expr)
        return tensor_shape(rule, value, depth + 1) if value is not None else None
    return None


def is_tensor_expr(rule: Asker, expr: cst.BaseExpression, depth: int = 0) -> bool | None:
    """True: a tensor; False: a tuple/list of inputs; None: cannot tell."""
    if depth > 6:
        return None
    if isinstance(expr, (cst.Tuple, cst.List)):
        return False
    if tensor_shape(rule, expr) is not None:
        return True
    if isinstance(expr, cst.Name):
        value = assigned_value(rule, expr)
        if value is not None:
            return is_tensor_expr(rule, value, depth + 1)
    return None


def _parameter_passed(rule: Asker, name: cst.Name) -> bool | None:
    """True unless ``name`` is a parameter of a function of the module that a call in this file
    passes a tuple, or a value that cannot be told (a call's result: `_trace_with(m,
    m._make_tracing_inputs())`), where ``name`` is used as the example: None then."""
    fn = enclosing(rule, name, (cst.FunctionDef,))
    if fn is None or not isinstance(rule.parent(fn), cst.Module):
        return True
    params = [p.name.value for p in fn.params.params]
    if name.value not in params:
        return True
    index = params.index(name.value)
    module = module_of(rule, fn)
    found: list[cst.BaseExpression] = []

    class _Calls(cst.CSTVisitor):
        def visit_Call(self, node: cst.Call) -> None:
            if isinstance(node.func, cst.Name) and node.func.value == fn.name.value:
                keyword = next((a.value for a in node.args if a.keyword is not None and a.keyword.value == name.value), None)
                positional = [a.value for a in node.args if a.keyword is None and not a.star]
                if keyword is not None:
                    found.append(keyword)
                elif index < len(positional):
                    found.append(positional[index])

    if module is not None:
        module.visit(_Calls())
    for value in found:
        kind = is_tensor_expr(rule, value)
        if kind is False or (kind is None and not isinstance(value, cst.Name)):
            return None
    return True


def dims_spec(rule: Asker, expr: cst.BaseExpression, dim: str, ref: str | None,
              bounded: bool = False, seen: list | None = None,
              broadcast: bool = False) -> tuple[str | None, str | None, list[int]]:
    """Code of the dynamic-shapes entry for one example tensor (``ref``: code naming it), or why none,
    and the dims along which the example must be doubled.

    ``bounded``: the program is lowered to ExecuTorch, which plans memory for the largest shape and
    rejects larger inputs at run time, so each dim gets ``Dim.AUTO(max=...)``. ``seen``: per dim,
    the sizes the program calls the model with (the program model's evidence): a dim seen at
    several sizes is exported ``Dim.DYNAMIC``; a dim of size 1 in the example that the program
    calls at other sizes is doubled (torch.export specializes sizes 0 and 1: the supported way to
    keep such a dim dynamic is an example of size >= 2). ``broadcast``: another input of the same
    example has a first dim of 2 or more, so a first dim of size 1 here is not a batch (a time step
    or a scale the model broadcasts): it is neither doubled nor held."""
    shape = tensor_shape(rule, expr)
    if shape is not None:
        rank, sizes = shape
        if seen is not None and len(seen) != rank:
            seen = None  # the evidence is about something else
        varying = {i for i, s in enumerate(seen or []) if s is not None and len(s) > 1}
        grow: list[int] = []
        static: set[int] = set()
        for i, size in enumerate(sizes):
            if size not in (0, 1):
                continue
            others = sorted(x for x in ((seen or [])[i] or []) if x != size) if seen else []
            if size == 1 and others:
                grow.append(i)
                varying.add(i)
            elif i == 0 and size == 1 and broadcast:
                continue  # another input carries the batch: this one broadcasts along it (kept as it is)
            elif i == 0:
                how = batch_one(rule) if size == 1 else "hold"
                if how == "hold":
                    return None, _batch_one_problem(expr, size), []
                if how == "dynamic":
                    grow.append(0)
                    varying.add(0)
                else:
                    static.add(0)
        if rank == 0:
            return "{}", None, []
        entries = []
        for i, s in enumerate(sizes):
            if i in static:
                continue
            if i in varying and not bounded:
                entries.append(f"{i}: {dim}.DYNAMIC")
            else:
                entries.append(f"{i}: {auto(dim, bounded, 2 * s if i in grow and s else s)}")
        return "{" + ", ".join(entries) + "}", None, grow
    leading = leading_dims(expr)
    if leading and not bounded:  # `torch.ones((batch, *size))`: the dims before the star, the rest static
        entries, grow = [], []
        for i, size in enumerate(leading):
            if size in (0, 1) and i == 0:
                how = batch_one(rule) if size == 1 else "hold"
                if how == "hold":
                    return None, _batch_one_problem(expr, size), []
                if how == "static":
                    continue
                grow.append(0)
                entries.append(f"{i}: {dim}.DYNAMIC")
                continue
            entries.append(f"{i}: {auto(dim, bounded, size)}")
        return "{" + ", ".join(entries) + "}", None, grow
    if ref is not None:
        if bounded:  # the bound must hold the example's own size
            return f"{{i: {dim}.AUTO(max=max({DEFAULT_MAX}, 8 * {ref}.shape[i])) for i in range({ref}.dim())}}", None, []
        return f"{{i: {dim}.AUTO for i in range({ref}.dim())}}", None, []
    return None, f"cannot tell the rank of the example `{shown(expr)}`; bind it to a variable first", []


def _container_spec(rule: Asker, expr: cst.BaseExpression, dim: str, bounded: bool) -> str | None:
    """The dynamic-shapes entry of an example input that is a name bound to a dict, list or tuple of
    tensors (a dict of node features per type, a list of images): the same structure, with each
    tensor's dims, built from the value when the export runs. None for anything else."""
    if not isinstance(expr, cst.Name):
        return None
    value = assigned_value(rule, expr)
    per_dim = f"{dim}.AUTO(max=max({DEFAULT_MAX}, 8 * t.shape[i]))" if bounded else f"{dim}.AUTO"
    one = f"{{i: {per_dim} for i in range(t.dim())}}"
    if isinstance(value, cst.Dict) and value.elements and all(
            isinstance(e, cst.DictElement) and is_tensor_expr(rule, e.value) for e in value.elements):
        return f"{{k: {one} for k, t in {expr.value}.items()}}"
    if isinstance(value, (cst.List, cst.Tuple)) and value.elements and all(
            type(e) is cst.Element and is_tensor_expr(rule, e.value) for e in value.elements):
        items = f"[{one} for t in {expr.value}]"
        return items if isinstance(value, cst.List) else f"tuple({items[1:-1]})"
    return None


def _constant(expr: cst.BaseExpression) -> bool:
    """Whether an example input is a literal that is not a tensor (`True`, `None`, `3`, `-0.5`, `"mean"`)."""
    if isinstance(expr, cst.UnaryOperation) and isinstance(expr.operator, cst.Minus):
        expr = expr.expression
    return (isinstance(expr, cst.Name) and expr.value in ("True", "False", "None")) or isinstance(
        expr, (cst.Integer, cst.Float, cst.SimpleString))


def _plain_ref(expr: cst.BaseExpression) -> str | None:
    """Code that names an example tensor and may be read again in the export call: a name, or an
    item or attribute of one with constant keys (``batch["input_ids"]``, ``inputs.ids``, ``xs[0]``)."""
    node = expr
    while isinstance(node, (cst.Subscript, cst.Attribute)):
        if isinstance(node, cst.Subscript):
            if len(node.slice) != 1 or not isinstance(node.slice[0].slice, cst.Index):
                return None
            key = node.slice[0].slice.value
            if not isinstance(key, (cst.SimpleString, cst.Integer)):
                return None
        node = node.value
    if not isinstance(node, cst.Name):
        return None
    return node.value if node is expr else code(expr)


def batch_one(rule: Asker) -> str:
    """What an example of batch size 1 with no other size in sight exports to: the `batch-one`
    key of [tool.ts2export] ("dynamic", the default: the example doubled and the batch dim dynamic,
    as a TorchScript trace served any batch size; "static": batch 1 only; "hold": left TorchScript)."""
    options = rule.context.options or {}
    return options.get("batch_one", "dynamic")


def _batch_one_problem(expr: cst.BaseExpression, size: int) -> str:
    return (f"the example `{shown(expr)}` has size {size} in dimension 0: torch.export specializes dims of "
            "size 0/1, so the exported program would reject the other batch sizes that the TorchScript "
            "artifact accepted, and nothing in the checked files shows the sizes it is called with; use an "
            "example of size >= 2 there (or call the artifact at the sizes you serve) and run apply again"
            + ("" if size == 0 else ", or set `batch-one` under [tool.ts2export] (\"dynamic\": any batch size, "
               "\"static\": batch 1 only)"))


def doubled(source: str, dims: list[int]) -> str:
    """Code of an example tensor doubled along ``dims`` (two copies: same values, size >= 2)."""
    for d in dims:
        source = f"torch.cat([{source}] * 2{'' if d == 0 else f', dim={d}'})"
    return source


#: Upper bound of a dynamic dim lowered to ExecuTorch when the example's size is unknown.
DEFAULT_MAX = 64


def auto(dim: str, bounded: bool, size: int | None) -> str:
    if not bounded:
        return f"{dim}.AUTO"
    return f"{dim}.AUTO(max={max(DEFAULT_MAX, 8 * size) if size else DEFAULT_MAX})"


def dim_name(rule: Asker, node: cst.CSTNode) -> tuple[str, list[Import]]:
    """How generated code names ``torch.export.Dim``: ``Dim`` (imported) unless the file uses the
    name, or takes ``torch`` from a module of its package (which may let it import without torch)."""
    if "torch" in rule.context.libraries_through_the_run:
        return "torch.export.Dim", [Import("torch")]
    module_scope = rule.get_metadata(ScopeProvider, node, None)
    while module_scope is not None and getattr(module_scope, "parent", module_scope) is not module_scope:
        module_scope = module_scope.parent
    if module_scope is not None:
        for a in module_scope.assignments["Dim"]:
            n = getattr(a, "node", None)
            if not isinstance(n, cst.ImportFrom) or code(n.module) != "torch.export":
                return "torch.export.Dim", [Import("torch")]
    return "Dim", [Import("torch.export", "Dim")]


@dataclass
class ExportArgs:
    args: str  # code of the positional example tuple
    kwargs: str | None
    shapes: str  # code of dynamic_shapes
    comment: str | None = None  # why the generated code looks as it does (a doubled example, say)


def export_args(rule: Asker, example: cst.BaseExpression | None, kw: cst.BaseExpression | None,
                dim: str, bounded: bool = False, evidence: dict | None = None) -> tuple[ExportArgs | None, str | None]:
    """Arguments of ``torch.export.export`` from example inputs, with a dynamic-shapes entry per
    dim (``evidence``: what the program model found about the sizes the model is called with)."""
    seen_all = (evidence or {}).get("sizes") or []
    if example is None and kw is None:
        return None, "no example inputs"
    if example is not None and kw is not None:
        return None, "positional and keyword example inputs together are not supported; pass one of them"
    if kw is not None:
        if isinstance(kw, cst.Dict) and all(
            isinstance(e, cst.DictElement) and isinstance(e.key, cst.SimpleString) for e in kw.elements
        ):
            entries = []
            for e in kw.elements:
                ref = e.value.value if isinstance(e.value, cst.Name) else None
                spec, why, _ = dims_spec(rule, e.value, dim, ref, bounded)
                if spec is None:
                    return None, why
                entries.append(f"{code(e.key)}: {spec}")
            return ExportArgs("()", code(kw), "{" + ", ".join(entries) + "}"), None
        if isinstance(kw, cst.Name):
            per_dim = f"{dim}.AUTO(max=max({DEFAULT_MAX}, 8 * v.shape[i]))" if bounded else f"{dim}.AUTO"
            shapes = f"{{k: {{i: {per_dim} for i in range(v.dim())}} for k, v in {kw.value}.items()}}"
            return ExportArgs("()", kw.value, shapes), None
        return None, f"cannot see the keyword inputs `{shown(kw)}`; write them as a dict literal or a name"
    tensor = is_tensor_expr(rule, example)
    if tensor is None and isinstance(example, cst.Name):
        # a parameter or the result of a call: trace's common case, one tensor; unless a call of
        # this file passes the parameter something else, or something it cannot tell
        tensor = _parameter_passed(rule, example)
    if tensor is None:
        return None, (f"cannot tell whether the example `{shown(example)}` is one tensor or a tuple of inputs; "
                      "bind it to a tensor factory call or write the tuple")
    if tensor:
        srcs = [example]
        refs = [_plain_ref(example)]
        codes = [code(example)]
        packed = None
    else:
        literal = example if isinstance(example, (cst.Tuple, cst.List)) else assigned_value(rule, example)
        if not isinstance(literal, (cst.Tuple, cst.List)) or any(type(e) is not cst.Element for e in literal.elements):
            return None, f"cannot see the elements of the example `{shown(example)}`"
        srcs = [e.value for e in literal.elements]
        if isinstance(example, cst.Name):
            refs = [f"{example.value}[{i}]" for i in range(len(srcs))]
            codes = list(refs)
            packed = f"tuple({example.value})" if isinstance(literal, cst.List) else example.value
        else:
            refs = [_plain_ref(s) for s in srcs]
            codes = [code(s) for s in srcs]
            packed = None
    shapes, grown = [], []
    firsts = [(shape[1][0] if shape is not None and shape[1] else None) for shape in (tensor_shape(rule, x) for x in srcs)]
    for i, (src, ref) in enumerate(zip(srcs, refs)):
        if len(srcs) > 1 and _constant(src):
            shapes.append("None")  # a bool, number, string or None: a constant of the program, guarded by export
            continue
        container = _container_spec(rule, src, dim, bounded)
        if container is not None:  # `x_dict = {"v": torch.randn(3, 16), ...}`: one entry per item
            shapes.append(container)
            continue
        seen = seen_all[i] if i < len(seen_all) and len(seen_all) == len(srcs) else None
        batched = any(isinstance(n, int) and n >= 2 for j, n in enumerate(firsts) if j != i)
        spec, why, grow = dims_spec(rule, src, dim, ref, bounded, seen, batched)
        if spec is None:
            return None, why
        shapes.append(spec)
        if grow:
            codes[i] = doubled(codes[i], grow)
            grown.append((i, grow, seen))
    if grown or packed is None:
        args_code = "(" + ", ".join(codes) + ("," if len(codes) == 1 else "") + ")"
    else:
        args_code = packed
    comment = None
    if grown:
        where = ", ".join((evidence or {}).get("where", [])[:3])
        parts, batch = [], []
        for i, grow, seen in grown:
            for d in grow:
                if not (seen and d < len(seen) and any(x != 1 for x in seen[d] or ())):
                    batch.append(f"input {i}" if len(srcs) > 1 else "the example")
                    continue
                sizes = ", ".join(str(x) for x in (seen[d] or []))
                parts.append((f"input {i} " if len(srcs) > 1 else "") + f"dim {d}: sizes {sizes}")
        if parts:
            comment = (f"# ts2export: example doubled where it has size 1, which export would fix, while the model is "
                       f"called at other sizes ({'; '.join(parts)}; {where})")
        else:
            comment = (f"# ts2export: {' and '.join(batch)} doubled along its batch dim (size 1, which export would fix): "
                       "the exported program takes any batch size, as the TorchScript one did; "
                       "batch-one = \"static\" under [tool.ts2export] exports batch 1 only")
    return ExportArgs(args_code, None, "(" + ", ".join(shapes) + ("," if len(shapes) == 1 else "") + ")", comment), None


def hint_inputs(rule: Asker, node: cst.CSTNode, names: list[str], method: str | None = None) -> str | None:
    """Example inputs given by a hint comment on the line or the comment lines just above
    (``# ts2export: inputs=...``; ``# ts2export: inputs.method=...`` for another entry point), or by
    the config (``"file.py::name"``; ``"file.py::name.method"``)."""
    pos = rule.position(node)
    lines = rule.context.lines
    pattern = _HINT if method is None else re.compile(r"#\s*ts2export:\s*inputs\." + re.escape(method) + r"\s*=\s*(.+?)\s*$")
    lineno = pos.start.line
    candidates = [lineno]
    while lineno - 1 > 0 and lines[lineno - 2].strip().startswith("#"):
        lineno -= 1
        candidates.append(lineno)
    for n in candidates:
        if 0 < n <= len(lines):
            m = pattern.search(lines[n - 1])
            if m:
                return m.group(1)
    table = rule.context.options.get("inputs") if rule.context.options else None
    if isinstance(table, dict) and table:
        rel = relative_path(rule)
        for name in names:
            value = table.get(f"{rel}::{name}" + (f".{method}" if method else ""))
            if isinstance(value, str):
                return value
    return None


def relative_path(rule: Asker) -> str:
    import os

    path = rule.context.path
    root = rule.context.options.get("root") if rule.context.options else None
    if root:
        try:
            return os.path.relpath(os.path.abspath(path), str(root)).replace(os.sep, "/")
        except ValueError:
            pass
    return path.replace(os.sep, "/")


def example_elements(rule: Asker, example: cst.BaseExpression) -> list[cst.BaseExpression]:
    """The example tensors of one set of trace inputs (a tensor or a tuple/list of them), where visible."""
    if is_tensor_expr(rule, example):
        return [example]
    literal = example if isinstance(example, (cst.Tuple, cst.List)) else (
        assigned_value(rule, example) if isinstance(example, cst.Name) else None)
    if isinstance(literal, (cst.Tuple, cst.List)):
        return [e.value for e in literal.elements if type(e) is cst.Element]
    return []


def specialized_but_checked(rule: Asker, example: cst.BaseExpression, checks: cst.BaseExpression | None) -> str | None:
    """Evidence from ``check_inputs``: a dim of size 0/1 in the example (export specializes it) that the
    trace was checked at another size."""
    if not isinstance(checks, (cst.List, cst.Tuple)):
        return None
    base = [tensor_shape(rule, e) for e in example_elements(rule, example)]
    for entry in checks.elements:
        if type(entry) is not cst.Element:
            continue
        for i, e in enumerate(example_elements(rule, entry.value)):
            shape = tensor_shape(rule, e)
            if i >= len(base) or shape is None or base[i] is None or shape[0] != base[i][0]:
                continue
            for d, (a, b) in enumerate(zip(base[i][1], shape[1])):
                if a in (0, 1) and b is not None and b != a:
                    return (f"input {i} has size {a} in dimension {d} in the example but {b} in `check_inputs`: "
                            f"torch.export specializes dims of size 0/1, so the program would reject size {b}; use an "
                            "example of size >= 2 in that dimension and run apply again")
    return None


def _value_before(rule: Asker, expr: cst.BaseExpression, line: int) -> cst.BaseExpression | None:
    """``expr`` if its names are bound before ``line``; for a name bound once after it (``x =
    torch.randn((batch, *size))`` between the script call and the first call) the value it is bound
    to, when that value's own names are bound before ``line`` and it evaluates plainly; else None."""
    if _defined_before(rule, expr, line):
        return expr
    if isinstance(expr, cst.Name):
        value = assigned_value(rule, expr)
        if (value is not None and not isinstance(rule.parent(value), cst.AugAssign)
                and _defined_before(rule, value, line) and _evaluates_plainly(rule, value, True)):
            return value
    return None


def _defined_before(rule: Asker, expr: cst.BaseExpression, line: int) -> bool:
    """Every name in ``expr`` is bound once, before ``line``, in the same scope (or is torch)."""
    ok = True

    class _V(cst.CSTVisitor):
        def visit_Name(self, node: cst.Name) -> None:
            nonlocal ok
            if node.value == "torch":
                return
            parent = rule.parent(node)
            if isinstance(parent, cst.Attribute) and parent.attr is node:
                return
            if isinstance(parent, cst.Arg) and parent.keyword is node:
                return
            scope = rule.get_metadata(ScopeProvider, node, None)
            assignments = list(scope[node.value]) if scope is not None else []
            if len(assignments) == 1 and isinstance(getattr(assignments[0], "node", None), cst.Param):
                return  # a parameter of the function
            value = assigned_value(rule, node)
            if value is None or rule.position(value).start.line >= line:
                ok = False

    expr.visit(_V())
    return ok


def script_names(rule: Asker, call: cst.Call, model: cst.BaseExpression) -> list[str]:
    """Names a config entry may use for a script call: the bound name, then the module's name."""
    parent = rule.parent(value_expr(rule, call))
    names = [code(model)]
    if isinstance(parent, cst.Assign) and len(parent.targets) == 1:
        names.insert(0, code(parent.targets[0].target))
    return names


def script_inputs(rule: Asker, call: cst.Call, model: cst.BaseExpression) -> tuple[cst.BaseExpression | None, str]:
    """Example inputs of a scripted module: hint comment, config entry, first call in scope, a trace of
    the same module in scope, or a tensor bound to a conventional example name (``EXAMPLE_NAMES``)."""
    value = value_expr(rule, call)
    parent = rule.parent(value)
    names = [code(model)]
    if isinstance(parent, cst.Assign) and len(parent.targets) == 1:
        names.insert(0, code(parent.targets[0].target))
    hint = hint_inputs(rule, call, names)
    if hint is not None:
        try:
            return cst.parse_expression(hint), "hint"
        except cst.ParserSyntaxError:
            return None, f"the inputs hint `{hint}` is not a Python expression"
    b = binding(rule, value)
    line = rule.position(call).start.line
    calls = [u for u in (classify_use(rule, r) for r in b.uses) if u.kind == "call" and not u.detail]
    calls.sort(key=lambda u: (rule.position(u.node).start.line, rule.position(u.node).start.column))
    for u in calls[:1]:
        c = u.outer
        if any(a.keyword is not None or a.star for a in c.args):
            break
        values = [_value_before(rule, a.value, line) for a in c.args]
        if not c.args or any(v is None for v in values):
            break
        source = "first call"
        plain = all(_evaluates_plainly(rule, v, True) for v in values)
        if plain and not all(_evaluates_plainly(rule, v) for v in values):
            values = [without_randomness(rule, v) for v in values]  # same shapes and dtypes, no random draw
            source = "first call, with ones and zeros for its random tensors"
        if plain:
            elements = [cst.Element(v, comma=cst.Comma(whitespace_after=cst.SimpleWhitespace(" "))) for v in values]
            elements[-1] = elements[-1].with_changes(comma=cst.Comma() if len(elements) == 1 else cst.MaybeSentinel.DEFAULT)
            return cst.Tuple(elements), source
    traced = _trace_example(rule, call, model, line)
    if traced is not None:
        return traced, "trace of the same module"
    named = _named_example(rule, call, line)
    if named is not None and not _traces_another_with(rule, call, model, named):
        return named, f"`{named.value}` in scope"
    return None, ""


#: Tensor factories and methods whose value depends only on their arguments: an example written with
#: them may be evaluated once more, at the export, without changing what the program computes.
PLAIN_FACTORIES = {"torch.ones", "torch.zeros", "torch.full", "torch.arange", "torch.tensor", "torch.eye",
                   "torch.linspace", "torch.logspace", "torch.ones_like", "torch.zeros_like", "torch.full_like",
                   "torch.as_tensor", "torch.stack", "torch.cat"}
PLAIN_METHODS = {"float", "double", "half", "bfloat16", "long", "int", "bool", "to", "cpu", "unsqueeze", "view", "reshape",
                 "clone", "contiguous", "t", "permute", "transpose", "flatten", "squeeze", "expand", "repeat", "detach"}


#: Random tensor factories and the plain factory of the same shape and dtype (values in range).
RANDOM_TWINS = {"torch.randn": "ones", "torch.rand": "ones", "torch.randn_like": "ones_like",
                "torch.rand_like": "ones_like", "torch.randint_like": "zeros_like", "torch.randperm": "arange"}


def without_randomness(rule: Asker, expr: cst.BaseExpression) -> cst.BaseExpression:
    """``expr`` with its random tensor factories replaced by plain ones of the same shape and dtype
    (``torch.randn(2, 3, generator=g)`` -> ``torch.ones(2, 3)``; ``torch.randint(lo, hi, size)`` ->
    ``torch.full(size, lo, dtype=torch.long)``): an example that draws nothing from the generator."""

    class _T(cst.CSTTransformer):
        def leave_Call(self, original: cst.Call, updated: cst.Call) -> cst.BaseExpression:
            name = next((n for n in (*RANDOM_TWINS, "torch.randint") if rule.matches(original.func, n)), None)
            if name is None:
                return updated
            args = [a for a in updated.args if not (a.keyword is not None and a.keyword.value == "generator")]
            if name == "torch.randint":
                positional = [a for a in args if a.keyword is None]
                keywords = [a for a in args if a.keyword is not None]
                if len(positional) == 2:
                    low, size = cst.Integer("0"), positional[1].value
                elif len(positional) == 3:
                    low, size = positional[0].value, positional[2].value
                else:
                    return updated
                extra = [code(k.with_changes(comma=cst.MaybeSentinel.DEFAULT)) for k in keywords]
                if not any(k.keyword.value == "dtype" for k in keywords):
                    extra.append("dtype=torch.long")
                return cst.parse_expression(f"torch.full({code(size)}, {code(low)}" + "".join(", " + e for e in extra) + ")")
            if name == "torch.randint_like" and len(args) > 1:
                args = args[:1] + [a for a in args[1:] if a.keyword is not None]
            if args:
                args[-1] = args[-1].with_changes(comma=cst.MaybeSentinel.DEFAULT)
            func = cst.parse_expression(f"torch.{RANDOM_TWINS[name]}")
            return updated.with_changes(func=func, args=args)

    return expr.visit(_T())


def _evaluates_plainly(rule: Asker, expr: cst.BaseExpression, random_too: bool = False) -> bool:
    """Whether evaluating ``expr`` again (as an export's example, next to the call it was copied
    from) leaves the program as it was: names, literals, arithmetic and the plain factories above.
    Not so a random factory (`torch.randn(4, 5)` would draw from the generator once more: every
    later random number changes; with ``random_too`` they count, for :func:`without_randomness`
    replaces them) nor any other call (it may read a batch, count, print)."""
    if isinstance(expr, (cst.Name, cst.BaseNumber, cst.SimpleString)):
        return True
    if isinstance(expr, cst.Attribute):
        return _evaluates_plainly(rule, expr.value, random_too)
    if isinstance(expr, (cst.Tuple, cst.List)):
        return all(_evaluates_plainly(rule, e.value, random_too) for e in expr.elements)
    if isinstance(expr, cst.BinaryOperation):
        return _evaluates_plainly(rule, expr.left, random_too) and _evaluates_plainly(rule, expr.right, random_too)
    if isinstance(expr, cst.UnaryOperation):
        return _evaluates_plainly(rule, expr.expression, random_too)
    if isinstance(expr, cst.Subscript):
        return _evaluates_plainly(rule, expr.value, random_too) and all(
            isinstance(e.slice, cst.Index) and _evaluates_plainly(rule, e.slice.value, random_too) for e in expr.slice)
    if isinstance(expr, cst.Call):
        args = all(_evaluates_plainly(rule, a.value, random_too) for a in expr.args)
        if rule.matches(expr.func, *PLAIN_FACTORIES) or (random_too and rule.matches(expr.func, *RANDOM_TWINS, "torch.randint")):
            return args
        func = expr.func
        if isinstance(func, cst.Attribute) and func.attr.value in PLAIN_METHODS and not rule.matches_prefix(func, "torch"):
            return args and _evaluates_plainly(rule, func.value, random_too)
    return False


#: Names that programs give their example inputs; a tensor (or tuple) bound to one of them before the
#: script call, in the same scope, is taken as the example.
EXAMPLE_NAMES = ("example_inputs", "example_input", "example", "dummy_inputs", "dummy_input", "sample_inputs", "sample_input")


def _trace_example(rule: Asker, call: cst.Call, model: cst.BaseExpression, line: int) -> cst.BaseExpression | None:
    """The example of a ``torch.jit.trace`` of the same module in the same function (or module body)."""
    model_code = code(model)
    found = [ex for m, ex in _traces_around(rule, call) if code(m) == model_code]
    for ex in found:
        if _defined_before(rule, ex, line):
            return ex
    return None


def _traces_another_with(rule: Asker, call: cst.Call, model: cst.BaseExpression, name: cst.Name) -> bool:
    """Whether a call in the same function hands ``name`` on together with another module than
    ``model`` (`torch.jit.trace(encoder, example)`, or a helper's `_trace_with(encoder, example)`):
    `example` was the encoder's input, not the decoder's."""
    model_code = code(model)
    return any(len(node.args) >= 2 and code(node.func) != model_code and code(node.args[0].value) != model_code
               and any(isinstance(a.value, cst.Name) and a.value.value == name.value for a in node.args[1:])
               for node in _calls_around(rule, call))


def _traces_around(rule: Asker, call: cst.Call) -> list[tuple[cst.BaseExpression, cst.BaseExpression]]:
    """(module, example) of each ``torch.jit.trace`` in the function (or module body) of ``call``."""
    found = []
    for node in _calls_around(rule, call):
        if rule.matches(node.func, TRACE):
            m, ex = argument(node, 0, "func"), argument(node, 1, "example_inputs")
            if m is not None and ex is not None:
                found.append((m, ex))
    return found


def _calls_around(rule: Asker, call: cst.Call) -> list[cst.Call]:
    """The other calls in the function (or module body) of ``call``, nested functions and classes
    left out."""
    body = enclosing(rule, call, (cst.FunctionDef,)) or module_of(rule, call)
    found: list[cst.Call] = []

    class _V(cst.CSTVisitor):
        def visit_Call(self, node: cst.Call) -> None:
            if node is not call:
                found.append(node)

        def visit_FunctionDef(self, node: cst.FunctionDef) -> bool:
            return node is body

        def visit_ClassDef(self, node: cst.ClassDef) -> bool:
            return False

    body.visit(_V())
    return found


def evidence_of(rule: Asker, call: cst.Call) -> dict | None:
    """What the program model found about the inputs of the module this call makes (see
    :class:`ts2export.rule.ProgramView`)."""
    defs = rule.enclosing_defs(call)
    return rule.context.program.inputs_of(defs[0] if defs else "", code(call))


def _named_example(rule: Asker, call: cst.Call, line: int) -> cst.Name | None:
    scope = rule.get_metadata(ScopeProvider, call, None)
    if scope is None:
        return None
    for name in EXAMPLE_NAMES:
        assignments = [a for a in scope.assignments[name]] if name in scope.assignments else []
        if len(assignments) != 1 or not isinstance(getattr(assignments[0], "node", None), cst.Name):
            continue
        target = assignments[0].node
        value = assigned_value(rule, target)
        if value is None or rule.position(value).start.line >= line:
            continue
        if is_tensor_expr(rule, target) is not None:
            return target
    return None
