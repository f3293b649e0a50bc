"""The rewrite of a data-dependent ``if`` into ``torch.cond`` (TSX401): its branches become two
local functions over the tensors they read, returning the variables they hand on (or what they
return), with outputs that may alias an input cloned. :class:`Unfit` says why a branch cannot.
"""

from __future__ import annotations

import re
from typing import Callable

import libcst as cst

from ts2export.rule import Edit, comment_line, inline_node

from ._control_flow import TENSOR, assigned_names, code_of, names_in, small_targets, walk_statements
from ._module_walk import Site

_TRUE, _FALSE = "_true_branch", "_false_branch"


class Unfit(Exception):
    """The `if` cannot become `torch.cond`; the message says why (and what to do)."""


class CondRewrite:
    """Rewrites the `if`s of one file (``position``: the rule's positions of nodes); the names of
    the branch functions are fresh within each method."""

    def __init__(self, position: Callable) -> None:
        self.position = position
        self._taken: dict[int, set[str]] = {}

    def rewrite(self, site: Site, pred: cst.BaseExpression, swapped: bool) -> list[Edit]:
        """The edits that make `site`'s `if` a `torch.cond` on `pred` (branches swapped when it is negated)."""
        stmt = site.stmt
        assert isinstance(stmt, cst.If)
        true_body = list(stmt.body.body)
        if isinstance(stmt.orelse, cst.If):
            false_body = [stmt.orelse]
        elif isinstance(stmt.orelse, cst.Else):
            false_body = list(stmt.orelse.body.body)
        else:
            false_body = []
        for body in (true_body, false_body):
            _check_pure(body)
        rest: list = []
        t_ret, f_ret = _always_returns(true_body), _always_returns(false_body)
        if t_ret != f_ret or (not t_ret and (_has_return(true_body) or _has_return(false_body))):
            index = next(i for i, s in enumerate(site.block) if s is stmt)
            rest = list(site.block[index + 1:])
            other = false_body if t_ret else true_body
            if not (site.top and rest and t_ret != f_ret and not _has_return(other) and _always_returns(rest)):
                raise Unfit("one branch returns while the other goes on: make both branches `return` "
                             "(or both assign the same variables), then use `torch.cond`")
            _check_pure(rest)
            if t_ret:
                false_body = false_body + rest
            else:
                true_body = true_body + rest
        returning = _always_returns(true_body)
        region = [stmt] + rest
        operands, outputs = self._dataflow(site, true_body, false_body, region, returning)
        _check_dtypes(true_body, false_body, outputs, returning, site.analyzer.module.methods)
        t_name, f_name = self._names(site)
        params = cst.Parameters(params=[cst.Param(cst.Name(n)) for n in operands])
        if returning:
            arities: set = set()
            t_stmts = self._fix_returns(true_body, site, region, arities)
            f_stmts = self._fix_returns(false_body, site, region, arities)
            if len(arities) > 1:
                raise Unfit("the branches return different structures; torch.cond needs the same structure in both")
        else:
            t_stmts = _without_pass(true_body) + [self._return_outputs(outputs, true_body, site, region)]
            f_stmts = _without_pass(false_body) + [self._return_outputs(outputs, false_body, site, region)]
        if swapped:
            t_stmts, f_stmts = f_stmts, t_stmts
            t_header, f_header = (stmt.orelse.body.header if isinstance(stmt.orelse, cst.Else) else None), stmt.body.header
        else:
            t_header, f_header = stmt.body.header, (stmt.orelse.body.header if isinstance(stmt.orelse, cst.Else) else None)
        was = f"{'elif' if site.is_elif else 'if'} {inline_node(stmt.test, limit=None)}:"
        comment = "# Data-dependent branch" + (f" (was `{was}`)" if len(was) <= 60 else "") + \
            ": torch.cond keeps both branches for torch.export."
        leading = [] if site.is_elif else list(stmt.leading_lines)
        leading.append(cst.EmptyLine(comment=comment_line(comment)))

        def block(stmts: list, header) -> cst.IndentedBlock:
            return cst.IndentedBlock(body=stmts, header=header) if header is not None else cst.IndentedBlock(body=stmts)

        true_def = cst.FunctionDef(cst.Name(t_name), params, block(t_stmts, t_header), leading_lines=leading)
        false_def = cst.FunctionDef(cst.Name(f_name), params, block(f_stmts, f_header))
        ops = ", ".join(operands) + ("," if len(operands) == 1 else "")
        call = cst.parse_expression(f"torch.cond(PRED, {t_name}, {f_name}, ({ops}))")
        call = call.with_changes(args=[call.args[0].with_changes(value=pred), *call.args[1:]])
        if returning:
            last: cst.BaseSmallStatement = cst.Return(value=call)
        else:
            target = cst.Name(outputs[0]) if len(outputs) == 1 else cst.Tuple(
                [cst.Element(cst.Name(o)) for o in outputs], lpar=[], rpar=[])
            last = cst.Assign(targets=[cst.AssignTarget(target)], value=call)
        new = [true_def, false_def, cst.SimpleStatementLine([last])]
        if site.is_elif:
            replacement = cst.Else(body=cst.IndentedBlock(body=new))
        else:
            replacement = cst.FlattenSentinel(new)
        return [Edit(stmt, replacement)] + [Edit(s, cst.RemovalSentinel.REMOVE) for s in rest]

    def _names(self, site: Site) -> tuple[str, str]:
        taken = self._taken.get(id(site.method))
        if taken is None:
            taken = {n.value for n in names_in(site.method)}
            self._taken[id(site.method)] = taken
        k = 1
        while True:
            suffix = "" if k == 1 else f"_{k}"
            t, f = _TRUE + suffix, _FALSE + suffix
            if t not in taken and f not in taken:
                taken.update((t, f))
                return t, f
            k += 1

    def _dataflow(self, site: Site, true_body: list, false_body: list, region: list,
                  returning: bool) -> tuple[list[str], list[str]]:
        """(operands, outputs): tensors the branches read from before, variables they hand on."""
        scope = site.scope
        start = _pos(self.position(site.stmt).start)
        stores: set[int] = set()
        assigned_order: list[str] = []
        for body in (true_body, false_body):
            for node in walk_statements(body):
                for name in small_targets(node):
                    stores.add(id(name))
                    if name.value not in assigned_order:
                        assigned_order.append(name.value)
        defined_before = set(scope.params)
        for node in walk_statements(scope.func.body):
            for name in small_targets(node):
                if _pos(self.position(name).start) < start:
                    defined_before.add(name.value)
        inside = {id(n) for s in region for n in names_in(s)}
        outside = {n.value for n in names_in(scope.func.body) if id(n) not in inside}
        outputs: list[str] = []
        if not returning:
            outputs = [n for n in assigned_order if n in outside]
            if not outputs:
                raise Unfit("its branches assign nothing that is used afterwards; remove the `if` or rewrite it by hand")
            both_t, both_f = _definitely(true_body), _definitely(false_body)
            for name in outputs:
                if name not in defined_before and not (name in both_t and name in both_f):
                    raise Unfit(f"`{name}` is assigned in one branch only; assign it before the `if` or in both branches, then use `torch.cond`")
                kind = scope.kinds.get(name)
                if kind != TENSOR:
                    raise Unfit(f"`{name}` is not surely a tensor ({kind}); torch.cond branches must return tensors: rewrite it by hand")
        reads: list[str] = []
        for body in (true_body, false_body):
            for s in body:
                for n in names_in(s):
                    if id(n) not in stores and n.value not in reads:
                        reads.append(n.value)
        for name in outputs:
            if name not in reads and not (name in _definitely(true_body) and name in _definitely(false_body)):
                reads.append(name)
        operands: list[str] = []
        for name in reads:
            if not scope.is_local(name) or name not in defined_before:
                continue
            if scope.kinds.get(name) == TENSOR:
                operands.append(name)
            elif name in assigned_order:
                raise Unfit(f"a branch reassigns `{name}`, which is not a tensor; torch.cond operands must be tensors: rewrite it by hand")
        return operands, outputs

    def _fresh_name(self, name: str, body: list, site: Site, region: list, definite: bool) -> bool:
        """`name` surely holds a tensor made in the branch (not an input, not a view of one)."""
        values = []
        for node in walk_statements(body):
            if isinstance(node, cst.Assign):
                for t in node.targets:
                    hit = [n for n in assigned_names(t.target) if n.value == name]
                    if hit and not isinstance(t.target, cst.Name):
                        return False
                    if hit:
                        values.append(node.value)
            elif isinstance(node, (cst.AnnAssign, cst.AugAssign)):
                if any(n.value == name for n in assigned_names(node.target)):
                    if node.value is None:
                        return False
                    values.append(node.value if isinstance(node, cst.AnnAssign) else cst.BinaryOperation(
                        node.target, cst.Add(), node.value))
        if not values or not all(site.analyzer.fresh(v, site.scope) for v in values):
            return False
        if definite:
            return name in _definitely(body)
        start = _pos(self.position(site.stmt).start)
        for node in walk_statements(site.scope.func.body):
            for n in small_targets(node):
                if n.value == name and _pos(self.position(n).start) < start:
                    return False
        return name not in site.scope.params

    def _return_outputs(self, outputs: list[str], body: list, site: Site, region: list) -> cst.SimpleStatementLine:
        elements = []
        for name in outputs:
            value: cst.BaseExpression = cst.Name(name)
            if not self._fresh_name(name, body, site, region, definite=True):
                value = _clone(value)
            elements.append(value)
        ret = elements[0] if len(elements) == 1 else cst.Tuple([cst.Element(e) for e in elements], lpar=[], rpar=[])
        return cst.SimpleStatementLine([cst.Return(value=ret)])

    def _fix_returns(self, body: list, site: Site, region: list, arities: set) -> list:
        """The branch with each returned tensor that may alias an input made a `.clone()`."""
        returns = [n for n in walk_statements(body) if isinstance(n, cst.Return)]
        replace: dict[int, cst.Return] = {}
        for ret in returns:
            if ret.value is None:
                raise Unfit("a branch returns nothing; torch.cond branches must return tensors")
            elements = [e.value for e in ret.value.elements] if isinstance(ret.value, cst.Tuple) else [ret.value]
            if isinstance(ret.value, cst.Tuple) and any(isinstance(e, cst.StarredElement) for e in ret.value.elements):
                raise Unfit("a branch returns a starred tuple; rewrite it by hand")
            arities.add(len(elements) if isinstance(ret.value, cst.Tuple) else None)
            new_elements = []
            for e in elements:
                kind = site.analyzer.kind(e, site.scope)
                if kind != TENSOR:
                    raise Unfit(f"a branch returns `{short(e)}`, which is not surely a tensor ({kind}); torch.cond branches must return tensors")
                if isinstance(e, cst.Name):
                    fresh = self._fresh_name(e.value, body, site, region, definite=False)
                else:
                    fresh = site.analyzer.fresh(e, site.scope)
                new_elements.append(e if fresh else _clone(e))
            if any(a is not b for a, b in zip(new_elements, elements)):
                if isinstance(ret.value, cst.Tuple):
                    value = ret.value.with_changes(elements=[el.with_changes(value=v) for el, v in zip(ret.value.elements, new_elements)])
                else:
                    value = new_elements[0]
                replace[id(ret)] = ret.with_changes(value=value)
        if not replace:
            return body

        class _T(cst.CSTTransformer):
            def on_leave(self, original, updated):  # type: ignore[override]
                return replace.get(id(original), updated)

        return [s.visit(_T()) for s in body]


def _without_pass(stmts: list) -> list:
    return [s for s in stmts if not (isinstance(s, cst.SimpleStatementLine) and all(isinstance(b, cst.Pass) for b in s.body))]

def _pos(p) -> tuple[int, int]:
    return (p.line, p.column)

def statement_expressions(stmt: cst.CSTNode) -> list[cst.CSTNode]:
    if isinstance(stmt, cst.SimpleStatementLine):
        return [stmt]
    if isinstance(stmt, (cst.If, cst.While)):
        return [stmt.test]
    if isinstance(stmt, cst.For):
        return [stmt.iter]
    return []

def unparen(node: cst.BaseExpression) -> cst.BaseExpression:
    if node.lpar:
        return node.with_changes(lpar=[], rpar=[])
    return node

def atom(node: cst.BaseExpression) -> cst.BaseExpression:
    atomic = (cst.Name, cst.Attribute, cst.Call, cst.Subscript)
    if isinstance(node, atomic) or node.lpar:
        return node
    return node.with_changes(lpar=[cst.LeftParen()], rpar=[cst.RightParen()])

def _clone(node: cst.BaseExpression) -> cst.Call:
    return cst.Call(cst.Attribute(atom(node), cst.Name("clone")))

def short(node: cst.CSTNode) -> str:
    text = " ".join(code_of(node).split())
    return text if len(text) <= 50 else text[:47] + "..."

def _always_returns(stmts: list) -> bool:
    if not stmts:
        return False
    last = stmts[-1]
    if isinstance(last, cst.SimpleStatementLine):
        return any(isinstance(s, cst.Return) for s in last.body)
    if isinstance(last, cst.If):
        if isinstance(last.orelse, cst.If):
            other = [last.orelse]
        elif isinstance(last.orelse, cst.Else):
            other = list(last.orelse.body.body)
        else:
            return False
        return _always_returns(list(last.body.body)) and _always_returns(other)
    return False

def _has_return(stmts: list) -> bool:
    return any(isinstance(n, cst.Return) for n in walk_statements(stmts))

def _definitely(stmts: list) -> set[str]:
    """Names assigned on every path through `stmts`."""
    out: set[str] = set()
    for stmt in stmts:
        if isinstance(stmt, cst.SimpleStatementLine):
            for small in stmt.body:
                out.update(n.value for n in small_targets(small))
        elif isinstance(stmt, cst.If):
            if isinstance(stmt.orelse, cst.If):
                other = _definitely([stmt.orelse])
            elif isinstance(stmt.orelse, cst.Else):
                other = _definitely(list(stmt.orelse.body.body))
            else:
                continue
            out.update(_definitely(list(stmt.body.body)) & other)
    return out

_ALLOWED_SMALL = (cst.Assign, cst.AnnAssign, cst.Pass, cst.Return)

def _check_pure(stmts: list) -> None:
    """Raise Unfit where a branch does something torch.cond cannot hold."""
    for node in walk_statements(stmts):
        if isinstance(node, (cst.SimpleStatementLine, cst.If, cst.Pass, cst.Return)):
            continue
        if isinstance(node, (cst.Assign, cst.AnnAssign)):
            targets = [t.target for t in node.targets] if isinstance(node, cst.Assign) else [node.target]
            for target in targets:
                bad = _non_name_target(target)
                if bad is not None:
                    raise Unfit(f"a branch assigns to `{short(bad)}` (a side effect torch.cond cannot hold); "
                                 "compute the new value in both branches and assign it after the `if`")
            continue
        if isinstance(node, cst.AugAssign) and not isinstance(node.target, cst.Name):
            raise Unfit(f"a branch updates `{short(node.target)}` (state outside the branch), which torch.cond "
                         "cannot hold; compute the update with tensor ops outside the `if` (or drop it from exported code)")
        if isinstance(node, cst.AugAssign):
            raise Unfit(f"a branch updates `{short(node.target)}` in place (`{short(node.operator).strip()}`), a side "
                         "effect torch.cond cannot hold; write `x = x + ...` (or move the update out of the branch)")
        if isinstance(node, cst.Expr):
            if isinstance(node.value, (cst.SimpleString, cst.ConcatenatedString)):
                continue
            raise Unfit(f"a branch calls `{short(node.value)}` for its side effect, which torch.cond cannot hold; "
                         "move it out of the branch")
        if isinstance(node, cst.Raise):
            raise Unfit("a branch raises, which torch.cond cannot hold; check the condition with "
                         "`torch._check(<one-element bool tensor>.item(), lambda: msg)` instead of `if ...: raise`")
        if isinstance(node, (cst.For, cst.While)):
            raise Unfit("a branch contains a loop; move the loop into a helper or restructure it, then use `torch.cond`")
        kind = type(node).__name__.lower()
        raise Unfit(f"a branch contains a `{kind}` statement, which the rewrite cannot keep correct; "
                     "rewrite it with `torch.cond` by hand")
    for stmt in stmts:
        for call in _calls_in(stmt):
            func = call.func
            if isinstance(func, cst.Attribute) and re.fullmatch(r"[a-z0-9]\w*[a-z0-9]_", func.attr.value):
                raise Unfit(f"a branch calls the in-place `{short(func)}()`, which torch.cond cannot hold; "
                             f"use the out-of-place `{func.attr.value[:-1]}()`")
        for n in _named_exprs(stmt):
            raise Unfit("a branch uses `:=`; rewrite it with `torch.cond` by hand")

#: Tensor methods that convert to one dtype, by the dtype they give.
_CASTS = {"double": "float64", "float": "float32", "half": "float16", "bfloat16": "bfloat16", "long": "int64",
          "int": "int32", "short": "int16", "bool": "bool", "byte": "uint8", "char": "int8"}
_DTYPE_NAMES = {"double": "float64", "float": "float32", "half": "float16", "long": "int64", "int": "int32",
                "short": "int16", "cdouble": "complex128", "cfloat": "complex64"}


def _cast(node: cst.BaseExpression, methods: dict | None = None, depth: int = 0) -> str | None:
    """The dtype an expression surely converts its value to at its outermost step (`.double()`,
    `.to(torch.float64)`, a comparison's bool, a method of the module whose one `return` does),
    or None where the expression does not say."""
    node = unparen(node)
    if isinstance(node, cst.Comparison):
        return "bool"
    if isinstance(node, cst.Call) and isinstance(node.func, cst.Attribute):
        name = node.func.attr.value
        target = node.func.value
        if methods and depth < 3 and isinstance(target, cst.Name) and target.value == "self" and name in methods:
            returns = [n for n in walk_statements(list(methods[name].body.body)) if isinstance(n, cst.Return)]
            return _cast(returns[0].value, methods, depth + 1) if len(returns) == 1 and returns[0].value is not None else None
        if name in _CASTS and not node.args:
            return _CASTS[name]
        if name in ("to", "type") and node.args:
            arg = next((a.value for a in node.args if a.keyword is not None and a.keyword.value == "dtype"), None)
            if arg is None and node.args[0].keyword is None:
                arg = node.args[0].value
            if isinstance(arg, cst.Attribute) and isinstance(arg.value, cst.Name) and arg.value.value == "torch":
                return _DTYPE_NAMES.get(arg.attr.value, arg.attr.value)
    return None


def _check_dtypes(true_body: list, false_body: list, outputs: list[str], returning: bool, methods: dict) -> None:
    """Raise Unfit where the two branches surely give an output different dtypes (one converts
    it, `.double()`, and the other does not, or to another): TorchScript returns either, torch.cond
    needs one dtype for both (export fails, `RuntimeError when making fake tensor call`)."""
    def last_values(body: list) -> dict[str, cst.BaseExpression]:
        found: dict[str, cst.BaseExpression] = {}
        for node in walk_statements(body):
            if isinstance(node, cst.Assign) and len(node.targets) == 1 and isinstance(node.targets[0].target, cst.Name):
                found[node.targets[0].target.value] = node.value
        return found

    def returned(body: list) -> list[list[cst.BaseExpression]]:
        out = []
        for node in walk_statements(body):
            if isinstance(node, cst.Return) and node.value is not None:
                out.append([e.value for e in node.value.elements] if isinstance(node.value, cst.Tuple) else [node.value])
        return out

    if returning:
        rows = returned(true_body) + returned(false_body)
        slots = {i: {_cast(row[i], methods) for row in rows if i < len(row)} for i in range(max((len(r) for r in rows), default=0))}
        where = {i: f"returned value {i + 1}" if len(slots) > 1 else "the returned value" for i in slots}
    else:
        t, f = last_values(true_body), last_values(false_body)
        slots = {n: {_cast(t[n], methods) if n in t else None, _cast(f[n], methods) if n in f else None} for n in outputs}
        where = {n: f"`{n}`" for n in outputs}
    for key, casts in slots.items():
        if len(casts) > 1:
            shown = ", ".join(sorted(c for c in casts if c))
            raise Unfit(f"the branches give {where[key]} different dtypes ({shown} in one, not in the other); torch.cond "
                        "needs the same dtype from both: convert it after the `if`, then use `torch.cond`")


def _non_name_target(target: cst.BaseExpression) -> cst.BaseExpression | None:
    if isinstance(target, cst.Name):
        return None
    if isinstance(target, (cst.Tuple, cst.List)):
        for el in target.elements:
            bad = _non_name_target(el.value)
            if bad is not None:
                return bad
        return None
    if isinstance(target, cst.StarredElement):
        return _non_name_target(target.value)
    return target

def _calls_in(node: cst.CSTNode) -> list[cst.Call]:
    found: list[cst.Call] = []

    class _V(cst.CSTVisitor):
        def visit_Call(self, n: cst.Call) -> None:
            found.append(n)

    node.visit(_V())
    return found

def _named_exprs(node: cst.CSTNode) -> list[cst.NamedExpr]:
    found: list[cst.NamedExpr] = []

    class _V(cst.CSTVisitor):
        def visit_NamedExpr(self, n: cst.NamedExpr) -> None:
            found.append(n)

    node.visit(_V())
    return found
