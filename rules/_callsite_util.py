"""Shared analysis of the call sites that produce and consume TorchScript artifacts (TSX3xx).

Rules are per file, so the dataflow here is per file too: an artifact is followed from the call that
makes it (``torch.jit.trace``/``script``/``load``, ``torch.export.export``/``load``) through simple
assignments (``name = ...`` bound once in its scope, ``self.attr = ...`` bound once in its class) to
its uses. A *plan* says how a producing call is rewritten, or why it cannot be; the rules of the uses
(save, lite-interpreter save, optimize_for_mobile) ask for the plan of their artifact's origin so
that they only rewrite a use whose origin is rewritten too, in the same fix mode.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Callable

import libcst as cst
from libcst.metadata import ScopeProvider

from ts2export.rule import Applicability, Edit, Import, Rule, argument

TRACE = "torch.jit.trace"
TRACE_MODULE = "torch.jit.trace_module"
SCRIPT = "torch.jit.script"
JIT_LOAD = "torch.jit.load"
JIT_SAVE = "torch.jit.save"
LITE_LOAD = ("torch.jit._load_for_lite_interpreter", "torch.jit.mobile._load_for_lite_interpreter")
OPTIMIZE = "torch.utils.mobile_optimizer.optimize_for_mobile"
EXPORT = "torch.export.export"
EXPORT_LOAD = "torch.export.load"
MOVE = "torch.export.passes.move_to_device_pass"
RNN_LAYERS = ("torch.nn.GRU", "torch.nn.LSTM", "torch.nn.RNN")

# Methods whose call on an artifact consumes the program itself (not its module()).
EP_METHODS = {"save", "_save_for_lite_interpreter", "_save_to_buffer_for_lite_interpreter"}
# Mode switches that an exported module rejects (NotImplementedError in torch 2.13).
MODE_METHODS = {"eval", "train"}
# Attributes of a ScriptModule that have no counterpart worth keeping on an exported program.
SCRIPT_ONLY_ATTRS = {"code", "graph", "inlined_graph", "code_with_constants", "original_name", "_c"}
_FACTORIES_SIZES = {"randn", "rand", "zeros", "ones", "empty"}
_HINT = re.compile(r"#\s*ts2export:\s*inputs\s*=\s*(.+?)\s*$")


def code(node: cst.CSTNode) -> str:
    return cst.Module(body=[]).code_for_node(node)


def call_name(rule: Rule, call: cst.Call) -> str | None:
    """The qualified name of a call's function among the ones this family knows."""
    return rule.matches(
        call.func, TRACE, SCRIPT, JIT_LOAD, JIT_SAVE, *LITE_LOAD, OPTIMIZE, EXPORT, EXPORT_LOAD, MOVE,
        TRACE_MODULE,
    )


# ------------------------------------------------------------------------------------------------
# bindings


def enclosing(rule: Rule, node: cst.CSTNode, kinds: tuple) -> cst.CSTNode | None:
    current = rule.parent(node)
    while current is not None and not isinstance(current, kinds):
        current = rule.parent(current)
    return current


def self_attribute(rule: Rule, node: cst.BaseExpression) -> str | None:
    """``attr`` if ``node`` is ``self.attr`` inside a method (first parameter named as in the method)."""
    if not (isinstance(node, cst.Attribute) and isinstance(node.value, cst.Name)):
        return None
    fn = enclosing(rule, node, (cst.FunctionDef,))
    if fn is None or not fn.params.params or fn.params.params[0].name.value != node.value.value:
        return None
    if enclosing(rule, fn, (cst.ClassDef, cst.FunctionDef)) is None or not isinstance(
        enclosing(rule, fn, (cst.ClassDef, cst.FunctionDef)), cst.ClassDef
    ):
        return None
    return node.attr.value


def _class_self_attributes(rule: Rule, cls: cst.ClassDef, attr: str) -> list[cst.Attribute]:
    """Every ``self.attr`` node (any method's first parameter) in the class, stores and loads."""
    found: list[cst.Attribute] = []

    class _V(cst.CSTVisitor):
        def __init__(self) -> None:
            self.selves: list[str] = []

        def visit_FunctionDef(self, node: cst.FunctionDef) -> None:
            params = node.params.params
            self.selves.append(params[0].name.value if params else "")

        def leave_FunctionDef(self, node: cst.FunctionDef) -> None:
            self.selves.pop()

        def visit_Attribute(self, node: cst.Attribute) -> None:
            if (
                node.attr.value == attr
                and isinstance(node.value, cst.Name)
                and self.selves
                and node.value.value == self.selves[-1]
            ):
                found.append(node)

    cls.body.visit(_V())
    return found


@dataclass
class Binding:
    """Where a producing call's value goes: a name, ``self.attr``, or nowhere (used in place)."""

    target: cst.BaseExpression | None  # the Name/Attribute bound, None when used in place
    uses: list[cst.BaseExpression] = field(default_factory=list)  # reading references (or the call itself)
    problem: str | None = None  # why the value cannot be followed
    rebinds: list[tuple[cst.Assign, str]] = field(default_factory=list)  # `x = x.eval()` and the like


#: Methods that return the module itself, so that `x = x.eval()` keeps `x` the same artifact.
REBIND_METHODS = {"eval", "train", "to", "cpu", "cuda", "half", "float", "double"}


def rebind(rule: Rule, store: cst.BaseExpression) -> tuple[cst.Assign, str, cst.BaseExpression] | None:
    """``(assign, method, receiver)`` when ``store`` is the target of ``x = x.method(...)``."""
    target = rule.parent(store)
    assign = rule.parent(target) if isinstance(target, cst.AssignTarget) else None
    if not (isinstance(assign, cst.Assign) and len(assign.targets) == 1):
        return None
    value = assign.value
    if (isinstance(value, cst.Call) and isinstance(value.func, cst.Attribute)
            and value.func.attr.value in REBIND_METHODS and code(value.func.value) == code(store)):
        return assign, value.func.attr.value, value.func.value
    return None


def binding(rule: Rule, call: cst.BaseExpression) -> Binding:
    """Follow the value of ``call`` to its uses."""
    parent = rule.parent(call)
    if isinstance(parent, cst.Assign) and parent.value is call:
        if len(parent.targets) != 1:
            return Binding(None, problem="the result is bound to several targets")
        target = parent.targets[0].target
        if isinstance(target, cst.Name):
            scope = rule.get_metadata(ScopeProvider, target, None)
            if scope is None:
                return Binding(target, problem="its scope is unknown")
            assignments = list(scope.assignments[target.value])
            stores = rule.in_source_order(a.node for a in assignments)
            refs: dict[int, cst.BaseExpression] = {}
            for a in assignments:
                for ref in a.references:
                    if isinstance(ref.node, cst.Name):
                        refs[id(ref.node)] = ref.node
            uses = rule.in_source_order(refs.values())
            found = _with_rebinds(rule, target, stores, uses, f"`{target.value}`")
            if found.problem:
                found = _sequential(rule, target, stores, uses) or found
            return found
        attr = self_attribute(rule, target)
        if attr is not None:
            cls = enclosing(rule, target, (cst.ClassDef,))
            nodes = _class_self_attributes(rule, cls, attr)
            stores = [n for n in nodes if _is_store(rule, n)]
            return _with_rebinds(rule, target, stores, [n for n in nodes if not _is_store(rule, n)], f"`self.{attr}`")
        return Binding(target, problem=f"the result is bound to `{code(target)}`")
    if isinstance(parent, (cst.AnnAssign, cst.AugAssign, cst.NamedExpr)):
        return Binding(None, problem="the result is bound by an annotated or walrus assignment")
    return Binding(None, [call])


def _sequential(rule: Rule, target: cst.Name, stores: list, refs: list) -> Binding | None:
    """A name bound several times by plain assignments that are statements of one block (test code
    that does `m = script(a); check(m); m = script(b); check(m)`): each reference belongs to the
    assignment before it, as no branch or loop lies between them. None when that does not hold."""
    statements = []
    for store in stores:
        holder = rule.parent(store)
        assign = rule.parent(holder) if isinstance(holder, cst.AssignTarget) else None
        line = rule.parent(assign) if isinstance(assign, cst.Assign) and len(assign.targets) == 1 else None
        if not isinstance(line, cst.SimpleStatementLine) or len(line.body) != 1:
            return None
        statements.append((rule.position(line).start, line, assign, store))
    blocks = {id(rule.parent(line)) for _, line, _, _ in statements}
    scope_of = enclosing(rule, target, (cst.FunctionDef, cst.Lambda, cst.ClassDef))
    if len(blocks) != 1 or any(enclosing(rule, r, (cst.FunctionDef, cst.Lambda, cst.ClassDef)) is not scope_of for r in refs):
        return None  # assignments in branches or loops, or a closure reading the name later
    node = rule.parent(statements[0][1])
    while node is not None and node is not scope_of:
        if isinstance(node, (cst.For, cst.While)):
            return None  # a reference above the assignments may read the previous iteration's value
        node = rule.parent(node)
    statements.sort(key=lambda s: (s[0].line, s[0].column))
    index = next(i for i, (_, _, _, store) in enumerate(statements) if store is target)
    start = statements[index][0]
    after = statements[index + 1] if index + 1 < len(statements) else None

    def mine(ref: cst.BaseExpression) -> bool:
        pos = rule.position(ref).start
        if (pos.line, pos.column) <= (start.line, start.column):
            return False
        if after is None:
            return True
        nxt_pos, _, nxt_assign, _ = after
        if (pos.line, pos.column) < (nxt_pos.line, nxt_pos.column):
            return True
        value = rule.position(nxt_assign.value)  # `m = m.something()`: the right side reads this binding
        return (value.start.line, value.start.column) <= (pos.line, pos.column) < (value.end.line, value.end.column)

    return Binding(target, [r for r in refs if mine(r)])


def _with_rebinds(rule: Rule, target, stores: list, refs: list, shown: str) -> Binding:
    """A binding whose other stores are all `x = x.eval()`-like rebinds (their receivers are not uses)."""
    b = Binding(target)
    receivers: set[int] = set()
    for store in stores:
        if store is target:
            continue
        found = rebind(rule, store) if isinstance(store, (cst.Name, cst.Attribute)) else None
        if found is None:
            return Binding(target, problem=f"{shown} is assigned more than once")
        b.rebinds.append((found[0], found[1]))
        receivers.add(id(found[2]))
    b.uses = [r for r in refs if id(r) not in receivers]
    return b


def _is_store(rule: Rule, node: cst.BaseExpression) -> bool:
    parent = rule.parent(node)
    if isinstance(parent, cst.AssignTarget) and parent.target is node:
        return True
    if isinstance(parent, (cst.AnnAssign, cst.AugAssign)) and parent.target is node:
        return True
    return False


def origin(rule: Rule, expr: cst.BaseExpression, depth: int = 0) -> cst.Call | None:
    """The producing call a value comes from: through names bound once, ``self.attr`` bound once,
    ``.eval()`` and ``optimize_for_mobile(...)`` (which return the module)."""
    if depth > 8:
        return None
    if isinstance(expr, cst.Call):
        name = call_name(rule, expr)
        if name == OPTIMIZE:
            inner = argument(expr, 0, "script_module")
            return origin(rule, inner, depth + 1) if inner is not None else None
        if name is not None:
            return expr
        if isinstance(expr.func, cst.Attribute) and expr.func.attr.value in ("eval", "module") and not expr.args:
            return origin(rule, expr.func.value, depth + 1)
        return None
    if isinstance(expr, cst.Name):
        scope = rule.get_metadata(ScopeProvider, expr, None)
        if scope is None:
            return None
        assignments = [a for a in scope[expr.value]
                       if not (isinstance(getattr(a, "node", None), cst.Name) and rebind(rule, a.node))]
        if len(assignments) != 1:
            return None
        node = getattr(assignments[0], "node", None)
        assign = rule.parent(rule.parent(node)) if node is not None else None
        if isinstance(assign, cst.Assign) and len(assign.targets) == 1 and assign.targets[0].target is node:
            return origin(rule, assign.value, depth + 1)
        return None
    attr = self_attribute(rule, expr)
    if attr is not None:
        cls = enclosing(rule, expr, (cst.ClassDef,))
        stores = [n for n in _class_self_attributes(rule, cls, attr) if _is_store(rule, n) and not rebind(rule, n)]
        if len(stores) == 1:
            assign = rule.parent(rule.parent(stores[0]))
            if isinstance(assign, cst.Assign) and len(assign.targets) == 1:
                return origin(rule, assign.value, depth + 1)
    return None


def assigned_value(rule: Rule, name: cst.Name) -> cst.BaseExpression | None:
    """The value a name is bound to when it is bound exactly once by a plain assignment."""
    scope = rule.get_metadata(ScopeProvider, name, None)
    if scope is None:
        return None
    assignments = list(scope[name.value])
    if len(assignments) != 1:
        return None
    node = getattr(assignments[0], "node", None)
    if node is None:
        return None
    if isinstance(node, (cst.FunctionDef, cst.ClassDef)):
        return None
    assign = rule.parent(rule.parent(node))
    if isinstance(assign, cst.Assign) and len(assign.targets) == 1 and assign.targets[0].target is node:
        return assign.value
    return None


def definition(rule: Rule, name: cst.Name) -> cst.CSTNode | None:
    """The FunctionDef/ClassDef a name refers to, if it is one defined in this file."""
    scope = rule.get_metadata(ScopeProvider, name, None)
    if scope is None:
        return None
    assignments = list(scope[name.value])
    if len(assignments) == 1 and isinstance(getattr(assignments[0], "node", None), (cst.FunctionDef, cst.ClassDef)):
        return assignments[0].node
    return None


# ------------------------------------------------------------------------------------------------
# uses


@dataclass
class Use:
    kind: str  # "call", "mode", "attr-call", "ep", "script-attr", "value"
    node: cst.BaseExpression  # the reference
    outer: cst.CSTNode | None = None  # the node that a rewrite of this use replaces
    detail: str = ""


def classify_use(rule: Rule, ref: cst.BaseExpression) -> Use:
    parent = rule.parent(ref)
    if isinstance(parent, cst.Call) and parent.func is ref:
        return Use("call", ref, parent)
    if isinstance(parent, cst.Attribute) and parent.value is ref:
        grand = rule.parent(parent)
        is_call = isinstance(grand, cst.Call) and grand.func is parent
        name = parent.attr.value
        if is_call and name in MODE_METHODS:
            return Use("mode", ref, grand, name)
        if is_call and name in EP_METHODS:
            return Use("ep", ref, grand, name)
        if name in SCRIPT_ONLY_ATTRS:
            return Use("script-attr", ref, parent, name)
        if is_call and name == "forward":
            return Use("call", ref, grand, name)
        return Use("attr-call" if is_call else "attr", ref, parent, name)
    if isinstance(parent, cst.Arg) and parent.value is ref:
        call = rule.parent(parent)
        if isinstance(call, cst.Call):
            qn = rule.matches(call.func, JIT_SAVE, OPTIMIZE, "torch.export.save", MOVE)
            if qn is not None and call.args and call.args[0] is parent:
                return Use("ep", ref, call, qn)
    return Use("value", ref, None)


def _stmt_of_expr_call(rule: Rule, call: cst.Call) -> cst.SimpleStatementLine | None:
    expr = rule.parent(call)
    if isinstance(expr, cst.Expr) and expr.value is call:
        line = rule.parent(expr)
        if isinstance(line, cst.SimpleStatementLine) and len(line.body) == 1:
            return line
    return None


def mode_edit(rule: Rule, use: Use) -> tuple[Edit | None, str | None]:
    """Edit that drops ``x.eval()`` / ``x.train(False)``; a reason when the call cannot be dropped."""
    call = use.outer
    assert isinstance(call, cst.Call)
    if use.detail == "train":
        arg = argument(call, 0, "mode")
        if not (isinstance(arg, cst.Name) and arg.value == "False"):
            return None, "`.train()` on an exported module is not supported: training mode is fixed at export time"
    line = _stmt_of_expr_call(rule, call)
    if line is not None:
        return Edit(line, cst.RemovalSentinel.REMOVE), None
    return Edit(call, use.node), None


# ------------------------------------------------------------------------------------------------
# example inputs and dynamic shapes


def _int(node: cst.BaseExpression | None) -> int | None:
    if isinstance(node, cst.Integer):
        return int(node.value, 0)
    return None


def _sizes_of_factory(rule: Rule, call: cst.Call, depth: int) -> tuple[int, list[int | None]] | None:
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
            dims = [e.value for e in positional[0].elements]
            return len(dims), [_int(d) for d in dims]
        if positional and all(not isinstance(p, (cst.Tuple, cst.List)) for p in positional):
            return len(positional), [_int(p) for p in positional]
        return None
    if short == "randint":
        size = sized if sized is not None else next((p for p in positional if isinstance(p, (cst.Tuple, cst.List))), None)
        if isinstance(size, (cst.Tuple, cst.List)):
            return len(size.elements), [_int(e.value) for e in size.elements]
        return None
    if short in ("arange", "linspace"):
        return 1, [None]
    if short in ("randn_like", "rand_like", "zeros_like", "ones_like", "empty_like"):
        inner = argument(call, 0, "input")
        return tensor_shape(rule, inner, depth + 1) if inner is not None else None
    if short == "tensor":
        data = argument(call, 0, "data")
        rank, sizes = 0, []
        while isinstance(data, (cst.List, cst.Tuple)):
            rank += 1
            sizes.append(len(data.elements))
            data = data.elements[0].value if data.elements else None
        return rank, sizes
    return None


def tensor_shape(rule: Rule, expr: cst.BaseExpression, depth: int = 0) -> tuple[int, list[int | None]] | None:
    if depth > 6 or expr is None:
        return None
    if isinstance(expr, cst.Call):
        return _sizes_of_factory(rule, expr, depth)
    if isinstance(expr, cst.Name):
        value = assigned_value(rule, expr)
        return tensor_shape(rule, value, depth + 1) if value is not None else None
    return None


def is_tensor_expr(rule: Rule, expr: cst.BaseExpression, depth: int = 0) -> bool | None:
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


def dims_spec(rule: Rule, expr: cst.BaseExpression, dim: str, ref: str | None,
              bounded: bool = False, seen: list | None = None) -> tuple[str | None, str | None, list[int]]:
    """Code of the dynamic-shapes entry for one example tensor (``ref``: code naming it), or why none,
    and the dims along which the example must be doubled.

    ``bounded``: the program is lowered to ExecuTorch, which plans memory for the largest shape and
    rejects larger inputs at run time, so each dim gets ``Dim.AUTO(max=...)``. ``seen``: per dim,
    the sizes the program calls the model with (the program model's evidence): a dim seen at
    several sizes is exported ``Dim.DYNAMIC``; a dim of size 1 in the example that the program
    calls at other sizes is doubled (torch.export specializes sizes 0 and 1: the supported way to
    keep such a dim dynamic is an example of size >= 2)."""
    shape = tensor_shape(rule, expr)
    if shape is not None:
        rank, sizes = shape
        if seen is not None and len(seen) != rank:
            seen = None  # the evidence is about something else
        varying = {i for i, s in enumerate(seen or []) if s is not None and len(s) > 1}
        grow: list[int] = []
        for i, size in enumerate(sizes):
            if size not in (0, 1):
                continue
            others = sorted(x for x in ((seen or [])[i] or []) if x != size) if seen else []
            if size == 1 and others:
                grow.append(i)
                varying.add(i)
            elif i == 0:
                return None, (
                    f"the example `{code(expr)}` has size {size} in dimension 0: torch.export specializes dims of "
                    "size 0/1, so the exported program would reject the other batch sizes that the TorchScript "
                    "artifact accepted, and nothing in the checked files shows the sizes it is called with; use an "
                    "example of size >= 2 there (or call the artifact at the sizes you serve) and run apply again"), []
        if rank == 0:
            return "{}", None, []
        entries = []
        for i, s in enumerate(sizes):
            if i in varying and not bounded:
                entries.append(f"{i}: {dim}.DYNAMIC")
            else:
                entries.append(f"{i}: {auto(dim, bounded, 2 * s if i in grow and s else s)}")
        return "{" + ", ".join(entries) + "}", None, grow
    if ref is not None:
        if bounded:  # the bound must hold the example's own size
            return f"{{i: {dim}.AUTO(max=max({DEFAULT_MAX}, 8 * {ref}.shape[i])) for i in range({ref}.dim())}}", None, []
        return f"{{i: {dim}.AUTO for i in range({ref}.dim())}}", None, []
    return None, f"cannot tell the rank of the example `{code(expr)}`; bind it to a variable first", []


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


def dim_name(rule: Rule, node: cst.CSTNode) -> tuple[str, list[Import]]:
    """How generated code names ``torch.export.Dim``: ``Dim`` (imported) unless the file uses the name."""
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


def export_args(rule: Rule, example: cst.BaseExpression | None, kw: cst.BaseExpression | None,
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
        return None, f"cannot see the keyword inputs `{code(kw)}`; write them as a dict literal or a name"
    tensor = is_tensor_expr(rule, example)
    if tensor is None and isinstance(example, cst.Name):
        tensor = True  # a parameter or the result of a call: trace's common case, one tensor (export fails loudly otherwise)
    if tensor is None:
        return None, (f"cannot tell whether the example `{code(example)}` is one tensor or a tuple of inputs; "
                      "bind it to a tensor factory call or write the tuple")
    if tensor:
        srcs = [example]
        refs = [example.value if isinstance(example, cst.Name) else None]
        codes = [code(example)]
        packed = None
    else:
        literal = example if isinstance(example, (cst.Tuple, cst.List)) else assigned_value(rule, example)
        if not isinstance(literal, (cst.Tuple, cst.List)) or any(type(e) is not cst.Element for e in literal.elements):
            return None, f"cannot see the elements of the example `{code(example)}`"
        srcs = [e.value for e in literal.elements]
        if isinstance(example, cst.Name):
            refs = [f"{example.value}[{i}]" for i in range(len(srcs))]
            codes = list(refs)
            packed = f"tuple({example.value})" if isinstance(literal, cst.List) else example.value
        else:
            refs = [s.value if isinstance(s, cst.Name) else None for s in srcs]
            codes = [code(s) for s in srcs]
            packed = None
    shapes, grown = [], []
    for i, (src, ref) in enumerate(zip(srcs, refs)):
        seen = seen_all[i] if i < len(seen_all) and len(seen_all) == len(srcs) else None
        spec, why, grow = dims_spec(rule, src, dim, ref, bounded, seen)
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
        parts = []
        for i, grow, seen in grown:
            for d in grow:
                sizes = ", ".join(str(x) for x in (seen[d] or []))
                parts.append((f"input {i} " if len(srcs) > 1 else "") + f"dim {d}: sizes {sizes}")
        comment = (f"# ts2export: example doubled where it has size 1, which export would fix, while the model is "
                   f"called at other sizes ({'; '.join(parts)}; {where})")
    return ExportArgs(args_code, None, "(" + ", ".join(shapes) + ("," if len(shapes) == 1 else "") + ")", comment), None


# ------------------------------------------------------------------------------------------------
# models


def model_class(rule: Rule, model: cst.BaseExpression) -> cst.ClassDef | None:
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


def exported_methods(rule: Rule, cls: cst.ClassDef | None) -> list[str]:
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


def model_kind(rule: Rule, model: cst.BaseExpression) -> str:
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


def script_module_instance(rule: Rule, expr: cst.BaseExpression) -> str | None:
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


def is_function(rule: Rule, model: cst.BaseExpression) -> bool:
    return model_kind(rule, model) == "function"


def recurrent_layers(rule: Rule, cls: cst.ClassDef | None, seen: set | None = None) -> list[str]:
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


def hint_inputs(rule: Rule, node: cst.CSTNode, names: list[str], method: str | None = None) -> str | None:
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
        rel = _relative_path(rule)
        for name in names:
            value = table.get(f"{rel}::{name}" + (f".{method}" if method else ""))
            if isinstance(value, str):
                return value
    return None


def _relative_path(rule: Rule) -> str:
    import os

    path = rule.context.path
    root = rule.context.options.get("root") if rule.context.options else None
    if root:
        try:
            return os.path.relpath(os.path.abspath(path), str(root)).replace(os.sep, "/")
        except ValueError:
            pass
    return path.replace(os.sep, "/")


# ------------------------------------------------------------------------------------------------
# plans: how a producing call and the uses of its value are rewritten

# Methods of a loaded/traced module that an exported module (a GraphModule) supports as well.
MODULE_METHODS = {
    "to", "cpu", "cuda", "half", "float", "double", "parameters", "named_parameters", "buffers",
    "named_buffers", "state_dict", "modules", "children", "named_modules", "requires_grad_", "zero_grad",
}


@dataclass
class Plan:
    edits: list[Edit] = field(default_factory=list)
    imports: list[Import] = field(default_factory=list)
    applicability: Applicability = Applicability.UNSAFE
    ep_mode: bool = False  # the name holds the ExportedProgram (it is saved/lowered), calls go through .module()
    notes: list[str] = field(default_factory=list)
    problem: str | None = None
    methods: list[str] = field(default_factory=list)  # entry points besides forward that the reader calls
    multi: bool = False  # the value is a dict of programs, one per method (its saves are rewritten with it)


def value_expr(rule: Rule, call: cst.Call) -> cst.BaseExpression:
    """``call`` or ``call.eval()`` when the call's value is put in eval mode in place."""
    parent = rule.parent(call)
    if isinstance(parent, cst.Attribute) and parent.value is call and parent.attr.value == "eval":
        grand = rule.parent(parent)
        if isinstance(grand, cst.Call) and grand.func is parent and not grand.args:
            return grand
    return call


def _module_call(ref: cst.BaseExpression) -> cst.Call:
    return cst.Call(func=cst.Attribute(value=ref, attr=cst.Name("module")))


def plan_uses(rule: Rule, call: cst.Call, new_code: Callable[[bool], str], what: str) -> Plan:
    """Rewrite the producing ``call`` (``new_code(ep_mode)`` is its replacement) and its value's uses."""
    plan = Plan()
    value = value_expr(rule, call)
    b = binding(rule, value)
    if b.problem:
        plan.problem = f"cannot follow the {what} ({b.problem})"
        return plan
    uses = [classify_use(rule, u) for u in b.uses]
    for u in uses:
        if u.kind == "attr-call" and u.detail not in MODULE_METHODS:
            plan.problem = (
                f"`.{u.detail}(...)` is called on the {what} (line {rule.position(u.node).start.line}); an exported "
                "program has one entry point, `forward`: export that method as its own program "
                "(see docs/callsites.md, several entry points) and call it there"
            )
            return plan
        if u.kind == "mode" and u.detail == "train":
            _, why = mode_edit(rule, u)
            if why:
                plan.problem = why + f" (line {rule.position(u.node).start.line})"
                return plan
    plan.ep_mode = any(u.kind == "ep" for u in uses)
    for u in uses:
        if u.kind == "ep":
            why = ep_use_problem(rule, u)
            if why:
                plan.problem = f"{why} (line {rule.position(u.node).start.line}), so the {what} stays as it is"
                return plan
    returned = [u for u in uses if u.kind == "value" and isinstance(rule.parent(u.node), cst.Return)]
    if returned:
        problem = _callers(rule, returned[0].node, plan, what)
        if problem:
            plan.problem = problem
            return plan
    for assign, method in b.rebinds:
        line = rule.parent(assign)
        single = isinstance(line, cst.SimpleStatementLine) and len(line.body) == 1
        if method == "eval" or (method == "train" and _is_false(argument(assign.value, 0, "mode"))):
            if not single:
                plan.problem = f"`{code(assign)}` shares its line with other statements"
                return plan
            plan.edits.append(Edit(line, cst.RemovalSentinel.REMOVE))
        elif method == "train":
            plan.problem = (f"`{code(assign)}`: `.train()` on an exported module is not supported: training mode is "
                            "fixed at export time")
            return plan
        elif plan.ep_mode:
            plan.problem = f"`{code(assign)}` rebinds the {what}, which is also saved: move the program with torch.export.passes.move_to_device_pass"
            return plan
        elif method in ("to", "cuda", "cpu") and not any("move_to_device_pass" in n for n in plan.notes):
            plan.notes.append(f"`.{method}(...)` on the exported module moves its parameters; tensors created in the graph keep "
                              "their device (use torch.export.passes.move_to_device_pass on the program if that matters)")
    in_place = b.target is None
    code_new = new_code(plan.ep_mode) + ("" if plan.ep_mode else ".module()")
    plan.edits.append(Edit(value, cst.parse_expression(code_new)))
    if in_place:
        return plan
    for u in uses:
        if u.kind == "mode":
            edit, _ = mode_edit(rule, u)
            if edit is not None:
                plan.edits.append(edit)
            if not plan.notes or "eval" not in plan.notes[-1]:
                plan.notes.append("`.eval()` dropped: an exported module runs in the mode it was exported in")
        elif u.kind == "ep":
            continue  # the save/lower rules rewrite these
        elif plan.ep_mode:
            plan.edits.append(Edit(u.node, _module_call(u.node)))
        if u.kind == "script-attr":
            plan.notes.append(f"`.{u.detail}` now shows the FX graph of the exported module")
    return plan


LITE_METHODS = {"_save_for_lite_interpreter", "_save_to_buffer_for_lite_interpreter"}


def lowered(rule: Rule, call: cst.Call, depth: int = 0) -> bool:
    """Whether the value of a producing call is lowered to ExecuTorch (lite-interpreter save or
    optimize_for_mobile) in this file, directly or through a name bound to it."""
    if depth > 4:
        return False
    b = binding(rule, value_expr(rule, call))
    for u in (classify_use(rule, r) for r in b.uses):
        if u.kind == "ep" and u.detail in LITE_METHODS | {OPTIMIZE}:
            return True
    for r in b.uses:  # aliases: other = traced
        parent = rule.parent(r)
        if isinstance(parent, cst.Assign) and parent.value is r and len(parent.targets) == 1:
            alias = parent.targets[0].target
            if isinstance(alias, cst.Name):
                sub = binding(rule, r)
                if any(classify_use(rule, x).detail in LITE_METHODS for x in sub.uses):
                    return True
    return False


def _is_false(node: cst.BaseExpression | None) -> bool:
    return isinstance(node, cst.Name) and node.value == "False"


_IGNORE = re.compile(r"#\s*ts2export:\s*ignore(?:\[([^\]]*)\])?", re.IGNORECASE)
_OWNER = {TRACE: "TSX301", SCRIPT: "TSX302", JIT_LOAD: "TSX304", TRACE_MODULE: "TSX308"}


def suppressed(rule: Rule, node: cst.CSTNode, rule_id: str) -> bool:
    """Whether a `# ts2export: ignore[...]` comment on the node's lines silences ``rule_id`` (then the
    rules of the uses must leave them alone too: the origin stays TorchScript)."""
    pos = rule.position(node)
    lines = rule.context.lines
    for n in {pos.start.line, pos.end.line}:
        m = _IGNORE.search(lines[n - 1]) if 0 < n <= len(lines) else None
        if m:
            if m.group(1) is None:
                return True
            ids = [x.strip().upper() for x in m.group(1).split(",") if x.strip()]
            if not ids or any(rule_id.startswith(x) for x in ids):
                return True
    return False


def ep_use_problem(rule: Rule, use: Use) -> str | None:
    """Why the rule of a use of the program (save, lite save, optimize_for_mobile) will not rewrite it;
    then the producing call must not be rewritten either."""
    call = use.outer
    if not isinstance(call, cst.Call):
        return None
    if use.detail == "save" and argument(call, 0, "f") is None:
        return "`.save()` has no path"
    if use.detail == JIT_SAVE and argument(call, 1, "f") is None:
        return "`torch.jit.save` has no path"
    if use.detail == "_save_for_lite_interpreter":
        if argument(call, 0, "f") is None:
            return "`._save_for_lite_interpreter()` has no path"
        if argument(call, 1, "_extra_files") is not None:
            return "`._save_for_lite_interpreter(..., _extra_files=...)` cannot be lowered as it is"
    if use.detail == "_save_to_buffer_for_lite_interpreter" and argument(call, 0, "_extra_files") is not None:
        return "`._save_to_buffer_for_lite_interpreter(_extra_files=...)` cannot be lowered as it is"
    if use.detail == OPTIMIZE:
        inner = plan_uses(rule, call, lambda ep: "x", "optimized module")
        if inner.problem:
            return f"the result of `optimize_for_mobile` cannot be followed ({inner.problem})"
    return None


def _callers(rule: Rule, ret: cst.BaseExpression, plan: Plan, what: str) -> str | None:
    """The artifact is returned by a function: follow the calls of that function in this file, drop
    `.eval()`/`.train(False)` on their results (edits added to ``plan``), refuse what cannot be kept."""
    fn = enclosing(rule, ret, (cst.FunctionDef, cst.Lambda))
    outer = enclosing(rule, fn, (cst.ClassDef, cst.FunctionDef)) if isinstance(fn, cst.FunctionDef) else None
    module = _module_of(rule, ret)
    if not isinstance(fn, cst.FunctionDef) or outer is not None or module is None:
        plan.notes.append("it is returned: callers that call `.eval()`/`.train()` on it get NotImplementedError "
                          "(drop those calls; TSX30x follow it within one file only)")
        return None
    calls: list[cst.Call] = []

    class _V(cst.CSTVisitor):
        def visit_Call(self, node: cst.Call) -> None:
            if isinstance(node.func, cst.Name) and node.func.value == fn.name.value and definition(rule, node.func) is fn:
                calls.append(node)

    module.visit(_V())
    for c in calls:
        value = value_expr(rule, c)
        if value is not c:  # load_model(p).eval()
            plan.edits.append(Edit(value, c))
        b = binding(rule, value)
        if b.problem:
            continue
        for u in (classify_use(rule, r) for r in b.uses):
            line = rule.position(u.node).start.line
            if u.kind == "mode":
                edit, why = mode_edit(rule, u)
                if edit is None:
                    return f"{why} (on the result of `{fn.name.value}()`, line {line})"
                plan.edits.append(edit)
            elif u.kind == "ep" and not plan.ep_mode:
                return (f"`{fn.name.value}()` returns the {what} and line {line} saves or lowers its result: "
                        "return the ExportedProgram and call `.module()` where it runs")
            elif u.kind == "attr-call" and u.detail not in MODULE_METHODS:
                return f"`.{u.detail}(...)` is called on the result of `{fn.name.value}()` (line {line})"
        for assign, method in b.rebinds:
            if method == "eval" or (method == "train" and _is_false(argument(assign.value, 0, "mode"))):
                plan.edits.append(Edit(rule.parent(assign), cst.RemovalSentinel.REMOVE))
    plan.notes.append(f"it is returned by `{fn.name.value}()`: `.eval()` on its results in this file dropped too; "
                      "callers in other files must drop theirs")
    return None


def plan_for(rule: Rule, call: cst.Call) -> Plan:
    """The plan of any producing call this family knows."""
    name = call_name(rule, call)
    if name in _OWNER and suppressed(rule, call, _OWNER[name]):
        return Plan(problem="the call is suppressed with `# ts2export: ignore` and stays TorchScript")
    if name == TRACE:
        return plan_trace(rule, call)
    if name == SCRIPT:
        return plan_script(rule, call)
    if name == JIT_LOAD:
        return plan_load(rule, call)
    if name in (EXPORT, EXPORT_LOAD, MOVE):
        return Plan(applicability=Applicability.SAFE, ep_mode=True)
    if name == TRACE_MODULE:
        problem, edits, imports = plan_trace_module(rule, call)
        return Plan(edits, imports, ep_mode=True, problem=problem, multi=True)
    return Plan(problem=f"`{code(call.func)}(...)` is not a program this tool can export")


def _export_code(model: str, ex: ExportArgs) -> str:
    kwargs = f", kwargs={ex.kwargs}" if ex.kwargs else ""
    return f"torch.export.export({model}, {ex.args}{kwargs}, dynamic_shapes={ex.shapes})"


FUNCTION_HELPER = '''class FunctionAsModule(torch.nn.Module):
    """A function as `forward`, so that torch.export can export it (added by ts2export)."""

    def __init__(self, fn):
        super().__init__()
        self.fn = fn

    def forward(self, *args):
        return self.fn(*args)
'''


def _model_problem(rule: Rule, model: cst.BaseExpression, verb: str, functions: bool = False) -> str | None:
    kind = model_kind(rule, model)
    if kind == "unknown":
        return (f"ts2export cannot tell whether `{code(model)}` is a module or a function (it is bound to both, or its "
                "value is not visible in the checked files: a parameter that nothing calls, a value built at run time), "
                "and torch.export.export takes a module only; if it is always an nn.Module, annotate it "
                "(`model: torch.nn.Module`) or check the files that call this code together")
    if kind == "class":
        return f"`{code(model)}` is a class, not a module instance: {verb} an instance"
    if kind == "function" and not functions:
        return (f"`{code(model)}` is a function: torch.export.export wants an nn.Module; wrap it "
                f"(`class {code(model).title().replace('_', '')}(torch.nn.Module): def forward(self, *a): return {code(model)}(*a)`) and {verb} the module")
    layers = recurrent_layers(rule, model_class(rule, model))
    call = rule.parent(rule.parent(model))
    if not layers and isinstance(call, cst.Call):
        defs = rule.enclosing_defs(call)
        layers = list(rule.context.program.recurrent_in(defs[0] if defs else "", code(call)))
    if layers:
        return (f"`{code(model)}` holds {', '.join('nn.' + x for x in sorted(set(layers)))}: torch.export specializes the sequence length "
                f"of recurrent layers (verified with torch 2.13: `Guard failed: x.size()[1] == 5`), while the "
                f"TorchScript artifact accepted any length; export once per sequence length you serve, or pad "
                f"inputs to one length, and then replace this call by hand")
    return None


def plan_trace(rule: Rule, call: cst.Call) -> Plan:
    model = argument(call, 0, "func")
    example = argument(call, 1, "example_inputs")
    kw = argument(call, None, "example_kwarg_inputs")
    if model is None:
        return Plan(problem="`torch.jit.trace` without a module")
    problem = _model_problem(rule, model, "trace", functions=True) or _expects_warnings(rule, call)
    if problem:
        return Plan(problem=problem)
    dim, imports = dim_name(rule, call)
    ex, why = export_args(rule, example, kw, dim, lowered(rule, call), evidence_of(rule, call))
    if ex is None:
        return Plan(problem=why)
    if is_function(rule, model):
        problem = _function_inputs_problem(rule, model, example)
        if problem:
            return Plan(problem=problem)
        plan = _plan_function(rule, call, model, ex)
    else:
        plan = plan_uses(rule, call, lambda ep: _export_code(code(model), ex), "traced module")
        if not plan.problem and ex.comment:
            explain(rule, plan, value_expr(rule, call), ex.comment)
            plan.notes.append("example doubled where it has size 1: the program calls the model at other sizes")
    if plan.problem:
        return plan
    plan.imports = [Import("torch"), *imports]
    if example is not None:
        varying = _specialized_but_checked(rule, example, argument(call, None, "check_inputs"))
        if varying:
            return Plan(problem=varying)
    if isinstance(example, cst.Name) and is_tensor_expr(rule, example) is None:
        plan.notes.append(f"assumes `{example.value}` is one tensor (if it is a tuple of inputs, pass `{example.value}` unwrapped)")
    if argument(call, None, "check_inputs") is not None:
        plan.notes.append("`check_inputs` dropped: every dim of size >= 2 is exported dynamic (Dim.AUTO)")
    return plan


def _expects_warnings(rule: Rule, call: cst.Call) -> str | None:
    """A trace inside `with pytest.warns(...)`: the test asserts the tracer's warnings (values baked
    into the trace, numpy conversions), which torch.export neither gives nor, often, survives."""
    node = rule.parent(call)
    while node is not None and not isinstance(node, (cst.FunctionDef, cst.ClassDef, cst.Module)):
        if isinstance(node, cst.With):
            for item in node.items:
                if isinstance(item.item, cst.Call) and rule.matches(item.item.func, "pytest.warns", "pytest.deprecated_call"):
                    return (f"the trace runs inside `with {code(item.item)}` (line {rule.position(node).start.line}): the "
                            "test expects the tracer's warnings (values baked into the trace), which torch.export does not "
                            "give and may fail on; it tests TorchScript itself, so it stays")
        node = rule.parent(node)
    return None


TENSOR_ANNOTATIONS = {"Tensor", "torch.Tensor", "Optional[Tensor]", "Optional[torch.Tensor]",
                      "typing.Optional[torch.Tensor]", "torch.Tensor | None", "Tensor | None"}


def _function_inputs_problem(rule: Rule, fn: cst.BaseExpression, example: cst.BaseExpression | None) -> str | None:
    """Why a traced function's example cannot be exported as it is: an example whose value is not
    visible goes to a parameter annotated as something other than a tensor (`wavelet: Wavelet`: a
    named tuple, a config object; torch.export's inputs are tensors and pytrees it knows)."""
    target = definition(rule, fn) if isinstance(fn, cst.Name) else None
    if not isinstance(target, cst.FunctionDef) or example is None:
        return None
    elements = _elements(rule, example)
    if not elements and isinstance(example, cst.Name):
        elements = [example]
    params = list(target.params.params)
    for value, param in zip(elements, params):
        if tensor_shape(rule, value) is not None:
            continue
        shown = code(param.annotation.annotation) if param.annotation is not None else None
        if shown is not None and shown not in TENSOR_ANNOTATIONS:
            what = ("a structure of tensors, whose dynamic shapes ts2export cannot spell from here" if "Tensor" in shown
                    else "not a tensor: torch.export takes tensors (and lists, tuples and dicts of them)")
            return (f"the example `{code(value)}` goes to `{param.name.value}: {shown}` of `{code(fn)}`, {what}, so the "
                    "export would fail where the trace ran; export a module whose inputs are tensors by hand")
        made = assigned_value(rule, value) if isinstance(value, cst.Name) else value
        if shown is None and isinstance(made, cst.Call) and is_tensor_expr(rule, made) is None:
            return (f"cannot tell whether the example `{code(value)}` (from `{code(made.func)}(...)`) is a tensor, and "
                    f"`{code(fn)}`'s parameter `{param.name.value}` does not say: torch.export takes tensors (and lists, "
                    "tuples and dicts of them); bind it to a tensor factory call, annotate the parameter, or export by hand")
    return None


def _plan_function(rule: Rule, call: cst.Call, fn: cst.BaseExpression, ex: ExportArgs) -> Plan:
    """A traced plain function: export it through a small ``FunctionAsModule`` wrapper defined just
    before the statement (torch.export.export wants an nn.Module)."""
    if ex.kwargs:
        return Plan(problem=f"`{code(fn)}` is a function traced with keyword inputs: wrap it in an nn.Module by hand")
    plan = plan_uses(rule, call, lambda ep: f"torch.export.export(FunctionAsModule({code(fn)}), {ex.args}, "
                                            f"dynamic_shapes=({ex.shapes},))", "traced function")
    if plan.problem:
        return plan
    for ref in binding(rule, value_expr(rule, call)).uses:
        use = classify_use(rule, ref)
        if use.kind == "call" and isinstance(use.outer, cst.Call) and any(a.keyword is not None for a in use.outer.args):
            line = rule.position(use.outer).start.line
            return Plan(problem=(f"the traced `{code(fn)}` is called with keyword arguments (line {line}), which the "
                                 "exported function does not take (its inputs are positional): pass them by position, "
                                 "then run apply again"))
    first = plan.edits[0]
    assign = rule.parent(first.node)
    line = rule.parent(assign) if assign is not None else None
    if not (isinstance(assign, cst.Assign) and assign.value is first.node and isinstance(line, cst.SimpleStatementLine)
            and len(line.body) == 1):
        return Plan(problem=f"`{code(fn)}` is a function: bind its trace to a name in a statement of its own, or wrap it "
                            "in an nn.Module by hand")
    helper = cst.parse_statement(FUNCTION_HELPER).with_changes(leading_lines=line.leading_lines)
    blank = [cst.EmptyLine(indent=False)] * (2 if isinstance(rule.parent(line), cst.Module) else 1)
    new_line = line.with_changes(body=[assign.with_changes(value=first.replacement)], leading_lines=blank)
    plan.edits[0] = Edit(line, cst.FlattenSentinel([helper, new_line]))
    plan.notes.append(f"`{code(fn)}` is a function: exported through a `FunctionAsModule` wrapper defined before the statement")
    return plan


def _elements(rule: Rule, example: cst.BaseExpression) -> list[cst.BaseExpression]:
    """The example tensors of one set of trace inputs (a tensor or a tuple/list of them), where visible."""
    if is_tensor_expr(rule, example):
        return [example]
    literal = example if isinstance(example, (cst.Tuple, cst.List)) else (
        assigned_value(rule, example) if isinstance(example, cst.Name) else None)
    if isinstance(literal, (cst.Tuple, cst.List)):
        return [e.value for e in literal.elements if type(e) is cst.Element]
    return []


def _specialized_but_checked(rule: Rule, example: cst.BaseExpression, checks: cst.BaseExpression | None) -> str | None:
    """Evidence from ``check_inputs``: a dim of size 0/1 in the example (export specializes it) that the
    trace was checked at another size."""
    if not isinstance(checks, (cst.List, cst.Tuple)):
        return None
    base = [tensor_shape(rule, e) for e in _elements(rule, example)]
    for entry in checks.elements:
        if type(entry) is not cst.Element:
            continue
        for i, e in enumerate(_elements(rule, entry.value)):
            shape = tensor_shape(rule, e)
            if i >= len(base) or shape is None or base[i] is None or shape[0] != base[i][0]:
                continue
            for d, (a, b) in enumerate(zip(base[i][1], shape[1])):
                if a in (0, 1) and b is not None and b != a:
                    return (f"input {i} has size {a} in dimension {d} in the example but {b} in `check_inputs`: "
                            f"torch.export specializes dims of size 0/1, so the program would reject size {b}; use an "
                            "example of size >= 2 in that dimension and run apply again")
    return None


def _defined_before(rule: Rule, expr: cst.BaseExpression, line: int) -> bool:
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


def _script_names(rule: Rule, call: cst.Call, model: cst.BaseExpression) -> list[str]:
    """Names a config entry may use for a script call: the bound name, then the module's name."""
    parent = rule.parent(value_expr(rule, call))
    names = [code(model)]
    if isinstance(parent, cst.Assign) and len(parent.targets) == 1:
        names.insert(0, code(parent.targets[0].target))
    return names


def script_inputs(rule: Rule, call: cst.Call, model: cst.BaseExpression) -> tuple[cst.BaseExpression | None, str]:
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
        if c.args and all(_defined_before(rule, a.value, line) for a in c.args):
            elements = [cst.Element(a.value, comma=cst.Comma(whitespace_after=cst.SimpleWhitespace(" "))) for a in c.args]
            elements[-1] = elements[-1].with_changes(comma=cst.Comma() if len(elements) == 1 else cst.MaybeSentinel.DEFAULT)
            return cst.Tuple(elements), "first call"
    traced = _trace_example(rule, call, model, line)
    if traced is not None:
        return traced, "trace of the same module"
    named = _named_example(rule, call, line)
    if named is not None:
        return named, f"`{named.value}` in scope"
    return None, ""


#: Names that programs give their example inputs; a tensor (or tuple) bound to one of them before the
#: script call, in the same scope, is taken as the example.
EXAMPLE_NAMES = ("example_inputs", "example_input", "example", "dummy_inputs", "dummy_input", "sample_inputs", "sample_input")


def _trace_example(rule: Rule, call: cst.Call, model: cst.BaseExpression, line: int) -> cst.BaseExpression | None:
    """The example of a ``torch.jit.trace`` of the same module in the same function (or module body)."""
    body = enclosing(rule, call, (cst.FunctionDef,)) or _module_of(rule, call)
    found: list[cst.BaseExpression] = []
    model_code = code(model)

    class _V(cst.CSTVisitor):
        def visit_Call(self, node: cst.Call) -> None:
            if node is not call and rule.matches(node.func, TRACE):
                m, ex = argument(node, 0, "func"), argument(node, 1, "example_inputs")
                if m is not None and ex is not None and code(m) == model_code:
                    found.append(ex)

        def visit_FunctionDef(self, node: cst.FunctionDef) -> bool:
            return node is body

        def visit_ClassDef(self, node: cst.ClassDef) -> bool:
            return False

    body.visit(_V())
    for ex in found:
        if _defined_before(rule, ex, line):
            return ex
    return None


def evidence_of(rule: Rule, call: cst.Call) -> dict | None:
    """What the program model found about the inputs of the module this call makes (see
    :class:`ts2export.rule.ProgramView`)."""
    defs = rule.enclosing_defs(call)
    return rule.context.program.inputs_of(defs[0] if defs else "", code(call))


def explain(rule: Rule, plan: Plan, value: cst.BaseExpression, comment: str) -> None:
    """Put ``comment`` on its own line above the statement whose ``value`` the plan rewrites."""
    first = next((e for e in plan.edits if e.node is value), None)
    line = rule.parent(value)
    while line is not None and not isinstance(line, cst.SimpleStatementLine):
        line = rule.parent(line)
    if first is None or line is None:
        return
    inside: set[int] = set()

    class _V(cst.CSTVisitor):
        def on_visit(self, node: cst.CSTNode) -> bool:
            inside.add(id(node))
            return True

    line.visit(_V())
    if any(id(e.node) in inside for e in plan.edits if e is not first):
        return  # another edit in the same statement: keep the edits apart
    note = cst.EmptyLine(indent=True, whitespace=cst.SimpleWhitespace(""), comment=cst.Comment(comment))
    new_line = line.deep_replace(value, first.replacement)
    new_line = new_line.with_changes(leading_lines=[*line.leading_lines, note])
    plan.edits[plan.edits.index(first)] = Edit(line, new_line)


def _named_example(rule: Rule, call: cst.Call, line: int) -> cst.Name | None:
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


def plan_script(rule: Rule, call: cst.Call) -> Plan:
    model = argument(call, 0, "obj")
    if model is None:
        return Plan(problem="`torch.jit.script` without an object")
    problem = _model_problem(rule, model, "script")
    if problem:
        return Plan(problem=problem)
    example, source = script_inputs(rule, call, model)
    evidence = evidence_of(rule, call)
    recorded = bool(evidence and evidence.get("recorded") and evidence.get("example"))
    if recorded and source != "hint":  # what the program was seen doing beats what the source suggests
        example = cst.parse_expression(evidence["example"])
        source = f"{evidence['where'][0]}"
    elif example is None and evidence is not None and evidence.get("example"):
        example = cst.parse_expression(evidence["example"])
        source = f"calls of the module at {', '.join(evidence['where'][:3])} (shapes and dtypes; ones and zeros)"
        recorded = False
    target = rule.parent(value_expr(rule, call))
    name = code(target.targets[0].target) if isinstance(target, cst.Assign) and len(target.targets) == 1 else code(model)
    if example is None:
        seen = ""
        if evidence is not None:
            seen = (f"the calls at {', '.join(evidence['where'][:3])} pass tensors whose shapes or dtypes are not "
                    "visible; ")
        return Plan(problem=(source + "; " if source else "") + seen + (
            f"`torch.jit.script({code(model)})` needs example inputs to export and nothing here shows them: add "
            f"`# ts2export: inputs=(torch.ones(2, 8),)` (your shapes; ones/zeros leave the random number generator alone) "
            f"on this line, or `\"{_relative_path(rule)}::{name}\" = \"(torch.ones(2, 8),)\"` under "
            "[tool.ts2export.inputs] in pyproject.toml, or run the program under `ts2export record -- python ...` "
            "and apply with `--recording ts2export-recording.json`"))
    dim, imports = dim_name(rule, call)
    if recorded:  # the recording's own dynamic shapes: named dims over the sizes seen, static elsewhere
        ex, why = ExportArgs(evidence["example"], evidence.get("kwargs"), evidence.get("dynamic_shapes") or "None"), None
    else:
        ex, why = export_args(rule, example, None, dim, lowered(rule, call), evidence)
    if ex is None:
        return Plan(problem=f"example inputs from the {source}: {why}")
    plan = plan_uses(rule, call, lambda ep: _export_code(code(model), ex), "scripted module")
    if not plan.problem and ex.comment:
        explain(rule, plan, value_expr(rule, call), ex.comment)
    if plan.problem:
        return plan
    entry = exported_methods(rule, model_class(rule, model))
    if entry and plan.ep_mode and source == "hint":
        names = _script_names(rule, call, model)
        hints = {m: hint_inputs(rule, call, names, m) for m in entry}
        if all(hints.values()):
            try:
                pairs = [("forward", example)] + [(m, cst.parse_expression(h)) for m, h in hints.items()]
            except cst.ParserSyntaxError:
                return Plan(problem="an `inputs.<method>=` hint is not a Python expression")
            problem, edits, imports2 = plan_programs(rule, call, model, pairs)
            if problem:
                return Plan(problem=problem)
            multi = Plan(edits, imports2, ep_mode=True, multi=True)
            multi.notes.append(f"one program per entry point (forward as \"model\", {', '.join(entry)}) from the hints")
            return multi
    if entry and plan.ep_mode:
        return Plan(problem=(
            f"the saved artifact offered the `@torch.jit.export` method(s) {', '.join(f'`{m}`' for m in entry)} besides "
            "forward; one exported program has forward only: export each method with its own inputs (e.g. through "
            "`torch.jit.trace_module(model, {\"forward\": x, \"" + entry[0] + "\": y})`, which TSX308 rewrites to one "
            "program per method in a pt2 archive), or add `# ts2export: inputs." + entry[0] + "=(...)` hints next to "
            "the `inputs=` hint, or confirm no reader calls them and remove the decorator"))
    plan.imports = [Import("torch"), *([] if recorded else imports)]
    plan.notes.insert(0, f"example inputs from the {source}: `{ex.args}`")
    return plan


def plan_load(rule: Rule, call: cst.Call) -> Plan:
    path = argument(call, 0, "f")
    if path is None:
        return Plan(problem="`torch.jit.load` without a path")
    loc = argument(call, 1, "map_location")
    extra = argument(call, 2, "_extra_files")
    if isinstance(loc, cst.Lambda):
        return Plan(problem="`map_location` is a function: move the loaded program with torch.export.passes.move_to_device_pass(ep, device) by hand")
    load = f"torch.export.load({code(path)}" + (f", extra_files={code(extra)}" if extra is not None else "") + ")"
    imports = [Import("torch")]
    if loc is not None and not (isinstance(loc, cst.Name) and loc.value == "None"):
        load = f"torch.export.passes.move_to_device_pass({load}, {code(loc)})"
        imports.append(Import("torch.export.passes"))
    b = binding(rule, value_expr(rule, call))
    uses = [classify_use(rule, r) for r in b.uses] if not b.problem and b.target is not None else []
    lowered_at = [u for u in uses if u.kind == "ep" and u.detail in LITE_METHODS | {OPTIMIZE}]
    if lowered_at:
        return Plan(problem=(f"the loaded module is lowered for mobile at line {rule.position(lowered_at[0].node).start.line}, "
                             "which stays as it is (see the finding there)"))
    if any(u.kind == "attr-call" and u.detail not in MODULE_METHODS for u in uses):
        return _plan_load_methods(rule, call, path, loc, extra, uses)
    plan = plan_uses(rule, call, lambda ep: load, "loaded module")
    plan.imports = imports
    return plan


def _plan_load_methods(rule: Rule, call: cst.Call, path, loc, extra, uses: list[Use]) -> Plan:
    """A loaded module whose other methods are called: read every program of the pt2 archive
    (TSX308 writes forward as "model" and one program per method) into a dict of modules."""
    if extra is not None:
        return Plan(problem="`_extra_files` with several entry points: read them with `load_pt2(path).extra_files` by hand")
    quote = '"'
    move = f"torch.export.passes.move_to_device_pass(ep, {code(loc)}).module()" if loc is not None and not (
        isinstance(loc, cst.Name) and loc.value == "None") else "ep.module()"
    imports = [Import("torch.export.pt2_archive._package", "load_pt2")]
    if move != "ep.module()":
        imports.append(Import("torch.export.passes"))
    plan = Plan(imports=imports)
    value = value_expr(rule, call)
    plan.edits.append(Edit(value, cst.parse_expression(
        f"{{name: {move} for name, ep in load_pt2({code(path)}).exported_programs.items()}}")))
    methods = []
    for u in uses:
        if u.kind == "call" and not u.detail:
            plan.edits.append(Edit(u.node, cst.parse_expression(f"{code(u.node)}[{quote}model{quote}]")))
        elif u.kind in ("call", "attr-call") and u.detail not in MODULE_METHODS:
            key = "model" if u.detail == "forward" else u.detail
            methods.append(u.detail)
            plan.edits.append(Edit(rule.parent(u.node), cst.parse_expression(f"{code(u.node)}[{quote}{key}{quote}]")))
        elif u.kind == "mode":
            edit, why = mode_edit(rule, u)
            if edit is None:
                return Plan(problem=why)
            plan.edits.append(edit)
        else:
            return Plan(problem=(f"`{code(u.outer or u.node)}` (line {rule.position(u.node).start.line}) has no rewrite "
                                 "for a set of exported programs"))
    plan.methods = sorted(set(methods))
    plan.notes.append(f"methods {', '.join(f'`{m}`' for m in sorted(set(methods)))} are read from the pt2 archive as separate "
                      "programs (written by `package_pt2`, see TSX308)")
    return plan


# ------------------------------------------------------------------------------------------------
# linking writers and readers of one artifact path (within a file)


def path_literal(rule: Rule, expr: cst.BaseExpression | None) -> str | None:
    """The value of a string literal, or of a name bound once to one."""
    if isinstance(expr, cst.Name):
        expr = assigned_value(rule, expr)
    if isinstance(expr, cst.SimpleString):
        value = expr.evaluated_value
        return value if isinstance(value, str) else None
    return None


def in_init(rule: Rule, node: cst.CSTNode) -> bool:
    """Whether ``node`` lies in ``__init__`` of a class (compiled submodules there belong to TSX106)."""
    fn = enclosing(rule, node, (cst.FunctionDef,))
    return fn is not None and fn.name.value == "__init__" and isinstance(enclosing(rule, fn, (cst.ClassDef, cst.FunctionDef)), cst.ClassDef)


def _module_of(rule: Rule, node: cst.CSTNode) -> cst.Module | None:
    current = node
    while current is not None and not isinstance(current, cst.Module):
        current = rule.parent(current)
    return current


def writers(rule: Rule, path_expr: cst.BaseExpression, methods: list[str] | None = None) -> tuple[str, str | None]:
    """A message suffix naming the save call sites of the same path literal in this file, and the
    reason why one of them cannot feed this reader (a writer that saves one program while the
    reader calls several methods)."""
    value = path_literal(rule, path_expr)
    module = _module_of(rule, path_expr)
    if value is None or module is None:
        return "", None
    lines: list[str] = []
    blocked: list[str] = []

    class _V(cst.CSTVisitor):
        def visit_Call(self, node: cst.Call) -> None:
            func = node.func
            saving = rule.matches(func, JIT_SAVE, "torch.export.save")
            receiver = None
            if saving:
                receiver = argument(node, 0, "m") or argument(node, 0, "ep")
            elif isinstance(func, cst.Attribute) and func.attr.value in ("save", "_save_for_lite_interpreter"):
                saving, receiver = func.attr.value, func.value
            if not saving or not any(path_literal(rule, a.value) == value for a in node.args):
                return
            line = rule.position(node).start.line
            lines.append(f"{line} (`{code(func)}`)")
            source = origin(rule, receiver) if receiver is not None else None
            if saving == "torch.export.save":
                return
            if source is None:
                blocked.append(f"the writer at line {line} saves a module whose origin is not visible")
                return
            plan = plan_for(rule, source)
            if plan.problem:
                blocked.append(f"the writer at line {line} keeps writing TorchScript "
                               f"(see the finding at line {rule.position(source).start.line})")
            elif methods and not plan.multi:
                blocked.append(f"the reader calls {', '.join(f'`.{m}`' for m in methods)} but the writer at line {line} "
                               "saves one program (forward); export one program per method (see TSX308)")

    module.visit(_V())
    if lines:
        return f"; `{value}` is written in this file at line {', '.join(lines)}", (blocked[0] if blocked else None)
    # Writers in other files are linked by the engine's program model, which holds this reader back
    # while they stay TorchScript.
    return "", None


def pte_path(path: cst.BaseExpression) -> str:
    """Code of an artifact path: kept as the user wrote it. Renaming `.ptl` to `.pte` here would break
    programs whose reader and writer spell the path differently (a literal on one side, a parameter on
    the other); ExecuTorch reads any file name. docs/callsites.md says how to rename by hand."""
    return code(path)


# ------------------------------------------------------------------------------------------------
# trace_module: several entry points

PACKAGE = "torch.export.pt2_archive._package"

HELPER = '''class MethodAsModule(torch.nn.Module):
    """One method of a module as `forward`, so that torch.export can export it (added by ts2export)."""

    def __init__(self, module, method):
        super().__init__()
        self.module = module
        self.method = method

    def forward(self, *args):
        return getattr(self.module, self.method)(*args)
'''



def plan_trace_module(rule: Rule, node: cst.Call) -> tuple[str | None, list[Edit], list[Import]]:
    """Edits that turn a trace_module call (bound to a name) and the uses of its result into a dict of
    exported programs (``\"model\"`` for forward), or why not."""
    model = argument(node, 0, "mod")
    inputs = argument(node, 1, "inputs")
    if model is None or inputs is None:
        return "it needs a module and a dict of example inputs", [], []
    problem = _model_problem(rule, model, "trace")
    if problem:
        return problem, [], []
    if not isinstance(inputs, cst.Dict) or not all(
        isinstance(e, cst.DictElement) and isinstance(e.key, cst.SimpleString) for e in inputs.elements
    ):
        return f"write the example inputs `{code(inputs)}` as a dict literal {{\"method\": inputs}}", [], []
    pairs = [(e.key.evaluated_value, e.value) for e in inputs.elements]
    return plan_programs(rule, node, model, pairs, inputs.elements[0].key.quote)


def plan_programs(rule: Rule, node: cst.Call, model: cst.BaseExpression, pairs: list[tuple[str, cst.BaseExpression]],
                  quote: str = '"') -> tuple[str | None, list[Edit], list[Import]]:
    """One exported program per (method, example inputs), in a dict bound where ``node`` was bound."""
    dim, imports = dim_name(rule, node)
    assign = rule.parent(node)
    line = rule.parent(assign) if assign is not None else None
    if not (isinstance(assign, cst.Assign) and len(assign.targets) == 1 and isinstance(assign.targets[0].target, cst.Name)
            and isinstance(line, cst.SimpleStatementLine) and len(line.body) == 1):
        return "bind the result to a name in a statement of its own", [], []
    b = binding(rule, node)
    if b.problem:
        return b.problem, [], []
    # Lowered to ExecuTorch: one multi-method .pte whose methods are named as in the module (forward),
    # with bounded dims. Saved as a pt2 archive: forward is "model", the name torch.export.load reads.
    kinds = [classify_use(rule, r) for r in b.uses]
    lowered_here = any(u.kind == "ep" and u.detail == "_save_for_lite_interpreter" for u in kinds)
    if lowered_here and any(u.kind == "ep" and u.detail in ("save", JIT_SAVE) for u in kinds):
        return "the programs are both saved as pt2 and lowered to ExecuTorch: do one of them per variable", [], []
    forward_key = "forward" if lowered_here else "model"
    entries: list[str] = []
    methods: dict[str, str] = {}
    for method, example in pairs:
        ex, why = export_args(rule, example, None, dim, lowered_here)
        if ex is None:
            return f"method `{method}`: {why}", [], []
        key = forward_key if method == "forward" else method
        methods[method] = key
        if method == "forward":
            entries.append(f"{quote}{key}{quote}: torch.export.export({code(model)}, {ex.args}, dynamic_shapes={ex.shapes})")
        else:
            entries.append(f"{quote}{method}{quote}: torch.export.export(MethodAsModule({code(model)}, {quote}{method}{quote}), "
                           f"{ex.args}, dynamic_shapes=({ex.shapes},))")
    edits: list[Edit] = []
    for ref in b.uses:
        u = classify_use(rule, ref)
        name = code(ref)
        if u.kind == "call" and not u.detail:
            edits.append(Edit(ref, cst.parse_expression(f"{name}[{quote}{forward_key}{quote}].module()")))
        elif u.kind in ("call", "attr-call") and (u.detail or "forward") in methods:
            attr = rule.parent(ref)
            edits.append(Edit(attr, cst.parse_expression(f"{name}[{quote}{methods[u.detail or 'forward']}{quote}].module()")))
        elif u.kind == "mode":
            edit, why = mode_edit(rule, u)
            if edit is None:
                return why, [], []
            edits.append(edit)
        elif u.kind == "ep" and u.detail in ("save", JIT_SAVE):
            save = u.outer
            if u.detail == "save":
                path, extra = argument(save, 0, "f"), argument(save, 1, "_extra_files")
            else:
                path, extra = argument(save, 1, "f"), argument(save, 2, "_extra_files")
            if path is None:
                return f"the save at line {rule.position(save).start.line} has no path", [], []
            new = f"package_pt2({code(path)}, exported_programs={name}" + (f", extra_files={code(extra)}" if extra is not None else "") + ")"
            edits.append(Edit(save, cst.parse_expression(new)))
            imports = [*imports, Import(PACKAGE, "package_pt2")]
        elif u.kind == "ep" and u.detail == "_save_for_lite_interpreter":
            save = u.outer
            path = argument(save, 0, "f")
            if path is None or argument(save, 1, "_extra_files") is not None:
                return f"the lite-interpreter save at line {rule.position(save).start.line} has no path or has extra files", [], []
            new = (f"pathlib.Path({code(path)}).write_bytes(to_edge_transform_and_lower({name}, "
                   "partitioner=[XnnpackPartitioner()]).to_executorch().buffer)")
            edits.append(Edit(save, cst.parse_expression(new)))
            imports = [*imports, Import("pathlib"), Import("executorch.exir", "to_edge_transform_and_lower"),
                       Import("executorch.backends.xnnpack.partition.xnnpack_partitioner", "XnnpackPartitioner")]
        else:
            return (f"`{code(u.outer or ref)}` (line {rule.position(ref).start.line}) has no rewrite for a set of "
                    "exported programs"), [], []
    helper = cst.parse_statement(HELPER).with_changes(leading_lines=line.leading_lines)
    new_line = line.with_changes(body=[assign.with_changes(value=cst.parse_expression("{" + ", ".join(entries) + "}"))],
                                 leading_lines=[cst.EmptyLine(indent=False)])
    edits.insert(0, Edit(line, cst.FlattenSentinel([helper, new_line])))
    return None, edits, [Import("torch"), *imports]
