"""Where a producing call's value goes in its file, and where a value comes from: names bound once
(or rebound by ``x = x.eval()``, or bound in sequence in one block), ``self.attr`` bound once in
its class, the producing call behind a name."""

from __future__ import annotations

from dataclasses import dataclass, field

import libcst as cst
from libcst.metadata import ScopeProvider

from ts2export.model.callsites.syntax import Asker, PASSES, REBIND_METHODS, argument, call_name, code, enclosing, shown


def self_attribute(rule: Asker, node: cst.BaseExpression) -> str | None:
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


def _class_self_attributes(rule: Asker, cls: cst.ClassDef, attr: str) -> list[cst.Attribute]:
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


def rebind(rule: Asker, store: cst.BaseExpression) -> tuple[cst.Assign, str, cst.BaseExpression] | None:
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


def binding(rule: Asker, call: cst.BaseExpression) -> Binding:
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
        return Binding(target, problem=f"the result is bound to `{shown(target)}`")
    if isinstance(parent, (cst.AnnAssign, cst.AugAssign, cst.NamedExpr)):
        return Binding(None, problem="the result is bound by an annotated or walrus assignment")
    return Binding(None, [call])


def _sequential(rule: Asker, target: cst.Name, stores: list, refs: list) -> Binding | None:
    """A name bound several times by plain assignments that are statements of one block (test code
    that does `m = script(a); check(m); m = script(b); check(m)`), and perhaps first as a parameter
    of the function: each reference belongs to the assignment before it, as no branch or loop lies
    between them. None when that does not hold."""
    statements = []
    scope_of = enclosing(rule, target, (cst.FunctionDef, cst.Lambda, cst.ClassDef))
    param = False
    for store in stores:
        holder = store if isinstance(store, cst.Param) else rule.parent(store)
        if isinstance(holder, cst.Param) and enclosing(rule, holder, (cst.FunctionDef, cst.Lambda, cst.ClassDef)) is scope_of:
            param = True  # the function's parameter: bound before any statement of its body
            continue
        assign = rule.parent(holder) if isinstance(holder, cst.AssignTarget) else None
        line = rule.parent(assign) if isinstance(assign, cst.Assign) and len(assign.targets) == 1 else None
        if not isinstance(line, cst.SimpleStatementLine) or len(line.body) != 1:
            return None
        statements.append((rule.position(line).start, line, assign, store))
    blocks = {id(rule.parent(line)) for _, line, _, _ in statements}
    if param and not (isinstance(scope_of, cst.FunctionDef) and {id(scope_of.body)} == blocks):
        return None  # rebound in a branch or loop: a use after it may still see the parameter
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


def _with_rebinds(rule: Asker, target, stores: list, refs: list, shown: str) -> Binding:
    """A binding whose other stores are all `x = x.eval()`-like rebinds (their receivers are not uses)."""
    b = Binding(target)
    receivers: set[int] = set()
    for store in stores:
        if store is target or _placeholder(rule, store, target):
            continue
        found = rebind(rule, store) if isinstance(store, (cst.Name, cst.Attribute)) else None
        if found is None:
            return Binding(target, problem=f"{shown} is assigned more than once")
        b.rebinds.append((found[0], found[1]))
        receivers.add(id(found[2]))
    b.uses = [r for r in refs if id(r) not in receivers]
    return b


def _placeholder(rule: Asker, store: cst.BaseExpression, target: cst.BaseExpression) -> bool:
    """``self.attr = None`` in a class whose one other store of ``self.attr`` is ``target``, made
    only under ``if self.attr is None:``: a value computed once, on first use (a lazy cache)."""
    if not isinstance(store, cst.Attribute):
        return False
    assign = rule.parent(rule.parent(store))
    if not (isinstance(assign, cst.Assign) and isinstance(assign.value, cst.Name) and assign.value.value == "None"):
        return False
    node = rule.parent(target)
    while node is not None and not isinstance(node, (cst.FunctionDef, cst.ClassDef)):
        if isinstance(node, cst.If) and not node.orelse:
            test = node.test
            if (isinstance(test, cst.Comparison) and len(test.comparisons) == 1
                    and isinstance(test.comparisons[0].operator, cst.Is)
                    and isinstance(test.comparisons[0].comparator, cst.Name) and test.comparisons[0].comparator.value == "None"
                    and code(test.left) == code(target)):
                return True
        node = rule.parent(node)
    return False


def _is_store(rule: Asker, node: cst.BaseExpression) -> bool:
    parent = rule.parent(node)
    if isinstance(parent, cst.AssignTarget) and parent.target is node:
        return True
    if isinstance(parent, (cst.AnnAssign, cst.AugAssign)) and parent.target is node:
        return True
    return False


def origin(rule: Asker, expr: cst.BaseExpression, depth: int = 0) -> cst.Call | None:
    """The producing call a value comes from: through names bound once, ``self.attr`` bound once,
    ``.eval()``, ``optimize_for_mobile(...)``, ``torch.jit.freeze(...)`` and
    ``torch.jit.optimize_for_inference(...)`` (which return the module, or a copy of it)."""
    if depth > 8:
        return None
    if isinstance(expr, cst.Call):
        name = call_name(rule, expr)
        if name in PASSES:
            inner = argument(expr, 0, PASSES[name])
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
            # `model = build()` then `model = torch.jit.trace(model, x)`: the statement before the use
            # in one block (no branch or loop between), as :func:`binding` reads it the other way
            for a in assignments:
                node = getattr(a, "node", None)
                assign = rule.parent(rule.parent(node)) if isinstance(node, cst.Name) else None
                if isinstance(assign, cst.Assign) and len(assign.targets) == 1 and assign.targets[0].target is node:
                    b = binding(rule, assign.value)
                    if not b.problem and any(u is expr for u in b.uses):
                        return origin(rule, assign.value, depth + 1)
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


def assigned_value(rule: Asker, name: cst.Name) -> cst.BaseExpression | None:
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


def definition(rule: Asker, name: cst.Name) -> cst.CSTNode | None:
    """The FunctionDef/ClassDef a name refers to, if it is one defined in this file."""
    scope = rule.get_metadata(ScopeProvider, name, None)
    if scope is None:
        return None
    assignments = list(scope[name.value])
    if len(assignments) == 1 and isinstance(getattr(assignments[0], "node", None), (cst.FunctionDef, cst.ClassDef)):
        return assignments[0].node
    return None


def path_literal(rule: Asker, expr: cst.BaseExpression | None) -> str | None:
    """The value of a string literal, or of a name bound once to one."""
    if isinstance(expr, cst.Name):
        expr = assigned_value(rule, expr)
    if isinstance(expr, cst.SimpleString):
        value = expr.evaluated_value
        return value if isinstance(value, str) else None
    return None
