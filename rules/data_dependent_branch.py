from __future__ import annotations

import re

import libcst as cst

from ts2export.rule import Applicability, Edit, Import, Invalid, Rule, Valid

from ._control_flow import (
    DATA,
    DEPENDENT,
    TENSOR,
    Scope,
    Site,
    assigned_names,
    code_of,
    is_builtin_call,
    is_module_class,
    screened_base_names,
    module_sites,
    names_in,
    small_targets,
    walk_statements,
)

_TRUE, _FALSE = "_true_branch", "_false_branch"


class _Unfit(Exception):
    """The `if` cannot become `torch.cond`; the message says why (and what to do)."""


class DataDependentBranch(Rule):
    """
    ## What it does
    Finds `if` statements in `forward` (and the methods it calls) of an `nn.Module` whose condition
    depends on tensor *values*: a comparison of tensors (`x.sum() > 0`), a tensor used as a truth
    value (`bool(t)`, `(x > 0).any()`), or a number read out of a tensor (`t.item()`, `int(t)`,
    `float(t)`, `torch.equal`). Where it can, it rewrites the `if` into `torch.cond`: each branch
    becomes a nested function (`_true_branch` / `_false_branch`) that takes the tensors it reads as
    operands and returns the tensors it assigns (or returns), and
    `torch.cond(pred, _true_branch, _false_branch, (operands,))` picks one at run time.

    Typing follows TorchScript: unannotated arguments are tensors, annotated ones have their type,
    tensor operations and submodule calls give tensors, `.shape` / `.size()` / `.dim()` /
    `.numel()` / `len()` give integers. Conditions on shapes and Python values (`x.shape[0] > 1`,
    `self.training`, `mask is None`) are left alone: `torch.export` handles them.

    ## Why
    TorchScript compiled such an `if` into a real branch of its graph. `torch.export` records one
    graph for all inputs and stops with `GuardOnDataDependentSymNode` ("Could not guard on
    data-dependent expression") or, in strict mode, "Data-dependent branching". This is the most
    common reason a migration off TorchScript stalls. `torch.cond` keeps both branches in the
    exported program (and in the ExecuTorch program lowered from it).

    ## Example
    ```python
    def forward(self, x):
        if x.sum() > 0:
            y = self.pos(x)
        else:
            y = self.neg(x)
        return y
    ```
    becomes
    ```python
    def forward(self, x):
        # Data-dependent branch (was `if x.sum() > 0:`): torch.cond keeps both branches for torch.export.
        def _true_branch(x):
            y = self.pos(x)
            return y
        def _false_branch(x):
            y = self.neg(x)
            return y
        y = torch.cond(x.sum() > 0, _true_branch, _false_branch, (x,))
        return y
    ```
    An `if` without `else` gets a false branch that returns the variables unchanged (as
    `.clone()`: a `torch.cond` branch may not return an input as it is); `if p: return a` followed
    by the rest of the function becomes a `torch.cond` whose false branch is the rest.

    Left as they are, with a finding that says why: branches with side effects (assignments to
    attributes or items, in-place operations, `+=`, calls for their effect, `raise`: use
    `torch._check`), loops or `try` inside a branch, non-tensor results, variables assigned in one
    branch only, `return` in one branch mixed with assignments, and conditions that are not one
    tensor (`and` / `or`, chained comparisons): split them or combine with `&` / `|` by hand.

    ## Fix safety
    Unsafe: the structure of the code changes. `torch.cond` needs both branches to produce tensors of
    the same dtype (export fails with "expected same dtype" otherwise; add `.to(dtype)`), and the
    predicate becomes a tensor: `t.item() > c` turns into `t > c`, which compares in `t`'s dtype
    instead of Python's float64 (a difference only for values within rounding of `c` in low
    precision), `int(t)` becomes `t.long()`, and the truth of a number (`if t:`) becomes
    `t.bool()`. Outputs that may alias an input (views, `.to()`, `nn.Identity`, methods of the
    module) are returned as `.clone()`, which costs a copy. Typing is static and follows
    TorchScript's rules; in code that was never scripted an unannotated argument that is not a tensor
    can be mistaken for one (annotate it). In eager mode `torch.cond` compiles its branches on first
    use (a second or so, once per shape family). The rewritten method can no longer be compiled by
    `torch.jit.script`. ExecuTorch 1.5.1 can compute wrong results, without an error, for several
    `torch.cond` in one program (their branches share planned memory): check a lowered `.pte`
    against the original on inputs that take each branch.

    Where an entry point that stays TorchScript still compiles (or traces) the method, the fix
    is held back: TorchScript cannot compile the nested branch functions. A data-dependent `if`
    left as it is holds back the entry points that export the method.
    """

    id = "TSX401"
    summary = "`if` on a tensor value: torch.export cannot trace it; use `torch.cond`"
    applicability = Applicability.UNSAFE
    blocks_export = True
    triggers = ("Module",)
    # Only the methods `forward` runs (and those TorchScript compiles as entry points, named with
    # `torch.jit.export` or `script_method`) are looked at.
    also_requires = (("forward", "jit", "script_method"),)

    VALID = [
        Valid(
            "import torch\nfrom torch import nn\n\n\nclass Net(nn.Module):\n"
            "    def forward(self, x, mask: Optional[torch.Tensor] = None):\n"
            "        if x.shape[0] > 1 and x.dim() == 2:\n            x = x * 2\n"
            "        if mask is not None:\n            x = x * mask\n"
            "        if self.training:\n            x = x + 1\n"
            "        if x.size(0) == 3 or x.numel() > 10 or len(x) > 4:\n            x = x - 1\n"
            "        if isinstance(x, torch.Tensor):\n            x = x + 2\n"
            "        return x\n"
        ),
        Valid(
            "import torch\n\n\nclass Net(torch.nn.Module):\n"
            "    def forward(self, x, flag: bool, scale: float = 1.0, mode: str = 'a'):\n"
            "        if flag and scale > 0.5 and mode == 'a':\n            x = x * scale\n"
            "        return x\n"
        ),
        # Not an nn.Module: nothing traces it.
        Valid("def f(x):\n    if x.sum() > 0:\n        return x\n    return -x\n"),
        # Not called from forward.
        Valid(
            "import torch\n\n\nclass Net(torch.nn.Module):\n    def forward(self, x):\n        return x\n\n"
            "    def debug(self, x):\n        if x.sum() > 0:\n            print(x)\n"
        ),
    ]
    INVALID = [
        # if/else assigning the same variable
        Invalid(
            "import torch\nfrom torch import nn\n\n\nclass Gate(nn.Module):\n"
            "    def __init__(self):\n        super().__init__()\n        self.pos = nn.Linear(4, 4)\n"
            "        self.neg = nn.Linear(4, 4)\n\n"
            "    def forward(self, x):\n"
            "        if x.sum() > 0:\n            y = self.pos(x)\n        else:\n            y = self.neg(x)\n"
            "        return y\n",
            "import torch\nfrom torch import nn\n\n\nclass Gate(nn.Module):\n"
            "    def __init__(self):\n        super().__init__()\n        self.pos = nn.Linear(4, 4)\n"
            "        self.neg = nn.Linear(4, 4)\n\n"
            "    def forward(self, x):\n"
            "        # Data-dependent branch (was `if x.sum() > 0:`): torch.cond keeps both branches for torch.export.\n"
            "        def _true_branch(x):\n            y = self.pos(x)\n            return y\n"
            "        def _false_branch(x):\n            y = self.neg(x)\n            return y\n"
            "        y = torch.cond(x.sum() > 0, _true_branch, _false_branch, (x,))\n"
            "        return y\n",
            unsafe=True,
        ),
        # if without else; .item() in the condition; `not` swaps the branches
        Invalid(
            "import torch\n\n\nclass Clamp(torch.nn.Module):\n"
            "    def forward(self, x, h):\n"
            "        s = x.abs().max()\n"
            "        if not s.item() < 1.0:\n            x = x / s\n            h = h * 2\n"
            "        return x + h\n",
            "import torch\n\n\nclass Clamp(torch.nn.Module):\n"
            "    def forward(self, x, h):\n"
            "        s = x.abs().max()\n"
            "        # Data-dependent branch (was `if not s.item() < 1.0:`): torch.cond keeps both branches for torch.export.\n"
            "        def _true_branch(x, s, h):\n            return x.clone(), h.clone()\n"
            "        def _false_branch(x, s, h):\n            x = x / s\n            h = h * 2\n            return x, h\n"
            "        x, h = torch.cond(s < 1.0, _true_branch, _false_branch, (x, s, h))\n"
            "        return x + h\n",
            unsafe=True,
        ),
        # early return; the rest of the function becomes the false branch; a view is cloned
        Invalid(
            "import torch\n\n\nclass Net(torch.nn.Module):\n"
            "    def forward(self, x):\n"
            "        if bool((x < 0).any()):\n            return x.flatten(1)\n"
            "        y = torch.relu(x)\n        return y.flatten(1)\n",
            "import torch\n\n\nclass Net(torch.nn.Module):\n"
            "    def forward(self, x):\n"
            "        # Data-dependent branch (was `if bool((x < 0).any()):`): torch.cond keeps both branches for torch.export.\n"
            "        def _true_branch(x):\n            return x.flatten(1).clone()\n"
            "        def _false_branch(x):\n            y = torch.relu(x)\n            return y.flatten(1).clone()\n"
            "        return torch.cond((x < 0).any(), _true_branch, _false_branch, (x,))\n",
            unsafe=True,
        ),
        # reported, left alone: side effect in a branch
        Invalid(
            "import torch\n\n\nclass Net(torch.nn.Module):\n"
            "    def forward(self, x):\n"
            "        if x.max() > 10:\n            self.overflows += 1\n            x = x / 10\n"
            "        return x\n",
            count=1,
        ),
        # reported, left alone: raise on data
        Invalid(
            "import torch\n\n\nclass Net(torch.nn.Module):\n"
            "    def forward(self, x):\n"
            "        if torch.isnan(x).any():\n            raise ValueError('nan')\n"
            "        return x\n",
            count=1,
        ),
        # reported, left alone: `and` of two conditions, conditional expression
        Invalid(
            "import torch\n\n\nclass Net(torch.nn.Module):\n"
            "    def forward(self, x, y):\n"
            "        if x.sum() > 0 and y.sum() > 0:\n            x = x + y\n"
            "        return x if x.mean() > 0 else y\n",
            count=2,
        ),
    ]

    def __init__(self, context) -> None:
        super().__init__(context)
        self._local_modules: set[str] = set()
        self._taken: dict[int, set[str]] = {}

    # -- traversal ------------------------------------------------------------------------------
    def visit_ClassDef(self, node: cst.ClassDef) -> None:
        if not is_module_class(node, screened_base_names(self), self._local_modules):
            return
        self._local_modules.add(node.name.value)
        for site in module_sites(node, self.qualnames, self._local_modules):
            for expr in _expressions(site.stmt):
                self._check_ifexp(expr, site)
            if isinstance(site.stmt, cst.If):
                self._check_if(site)

    def _check_ifexp(self, expr: cst.CSTNode, site: Site) -> None:
        found: list[cst.IfExp] = []

        class _V(cst.CSTVisitor):
            def visit_IfExp(self, n: cst.IfExp) -> None:
                found.append(n)

            def visit_Lambda(self, n: cst.Lambda) -> bool:
                return False

        expr.visit(_V())
        for ifexp in found:
            if site.analyzer.kind(ifexp.test, site.scope) in DEPENDENT:
                self.report(
                    ifexp.test,
                    f"`... if {_short(ifexp.test)} else ...` depends on a tensor value, which torch.export cannot "
                    "trace; use `torch.where(cond, a, b)` (same shapes) or `torch.cond` by hand",
                )

    def _check_if(self, site: Site) -> None:
        stmt = site.stmt
        assert isinstance(stmt, cst.If)
        analyzer, scope = site.analyzer, site.scope
        if analyzer.kind(stmt.test, scope) not in DEPENDENT:
            return
        head = f"`{'elif' if site.is_elif else 'if'} {_short(stmt.test)}:` depends on a tensor value, which torch.export cannot trace"
        try:
            pred, swapped = self._predicate(stmt.test, scope, site)
            self._check_raise(stmt, pred, swapped)
            edits = self._rewrite(site, pred, swapped)
        except _Unfit as why:
            self.report(stmt.test, f"{head}; {why}")
            return
        self.report(stmt.test, f"{head}; rewrite it with `torch.cond`", edits=edits, imports=[Import("torch")])

    @staticmethod
    def _check_raise(stmt: cst.If, pred: cst.BaseExpression, swapped: bool) -> None:
        """`if cond: raise E(msg)` is a check, not a branch: suggest the `torch._check` that export traces."""
        body = stmt.body.body
        if stmt.orelse is not None or len(body) != 1 or not isinstance(body[0], cst.SimpleStatementLine):
            return
        if len(body[0].body) != 1 or not isinstance(body[0].body[0], cst.Raise):
            return
        exc = body[0].body[0].exc
        message = '"..."'
        if isinstance(exc, cst.Call) and exc.args and isinstance(exc.args[0].value, (cst.SimpleString, cst.FormattedString)):
            message = code_of(exc.args[0].value)
        if swapped:
            holds = code_of(_atom(pred)) + ("" if isinstance(pred, cst.Comparison) else ".bool()")
            if isinstance(pred, cst.Comparison):
                holds = f"({code_of(pred)})"
        else:
            holds = f"torch.logical_not({code_of(pred)})"
        raise _Unfit(f"a branch that raises cannot go into torch.cond; check the condition with "
                     f"`torch._check({holds}.item(), lambda: {message})` instead (it raises RuntimeError)")

    # -- the predicate --------------------------------------------------------------------------
    def _predicate(self, test: cst.BaseExpression, scope: Scope, site: Site) -> tuple[cst.BaseExpression, bool]:
        """A one-tensor predicate equivalent to `test`, and whether it is negated (branches swap)."""
        swapped = False
        while isinstance(test, cst.UnaryOperation) and isinstance(test.operator, cst.Not):
            test, swapped = _unparen(test.expression), not swapped
        analyzer = site.analyzer
        kind = analyzer.kind(test, scope)
        if isinstance(test, cst.BooleanOperation):
            raise _Unfit("combine the conditions into one tensor with `&` / `|` (or nest two `if`s), then rewrite it with `torch.cond`")
        if isinstance(test, cst.Comparison) and len(test.comparisons) > 1:
            raise _Unfit("split the chained comparison into one tensor (`(a < t) & (t < b)`), then use `torch.cond`")
        pred = _unparen(test) if kind == TENSOR else _unparen(self._tensorize(test, scope, site))
        if not _is_bool(pred):
            # Python's truth of a number is `!= 0`; torch.cond wants a bool (ExecuTorch fails on others).
            pred = cst.Call(cst.Attribute(_atom(pred), cst.Name("bool")))
        return pred, swapped

    def _tensorize(self, node: cst.BaseExpression, scope: Scope, site: Site) -> cst.BaseExpression:
        """`node` with Python numbers read out of tensors replaced by the tensors themselves."""
        analyzer = site.analyzer
        kind = analyzer.kind(node, scope)
        if kind == TENSOR:
            return node
        if kind != DATA:
            return node
        if isinstance(node, cst.Call):
            func = node.func
            if isinstance(func, cst.Attribute) and func.attr.value == "item" and not node.args and \
                    analyzer.kind(func.value, scope) == TENSOR:
                return func.value
            for name in ("bool", "float", "int"):
                if is_builtin_call(node, name, scope) and len(node.args) == 1 and \
                        analyzer.kind(node.args[0].value, scope) in DEPENDENT:
                    inner = self._tensorize(node.args[0].value, scope, site)
                    if name == "int":
                        return cst.Call(cst.Attribute(_atom(inner), cst.Name("long")))
                    return inner
        elif isinstance(node, cst.Comparison):
            parts = [node.left] + [c.comparator for c in node.comparisons]
            new = [self._tensorize(p, scope, site) for p in parts]
            if any(n is not p for n, p in zip(new, parts)):
                return node.with_changes(
                    left=new[0],
                    comparisons=[c.with_changes(comparator=n) for c, n in zip(node.comparisons, new[1:])],
                )
        elif isinstance(node, cst.BinaryOperation):
            left, right = self._tensorize(node.left, scope, site), self._tensorize(node.right, scope, site)
            return node.with_changes(left=left, right=right)
        elif isinstance(node, cst.UnaryOperation) and not isinstance(node.operator, cst.Not):
            return node.with_changes(expression=self._tensorize(node.expression, scope, site))
        raise _Unfit(f"`{_short(node)}` is a Python value read out of a tensor; express the condition as a "
                     "one-element tensor (e.g. `t > 0` instead of `t.item() > 0`), then use `torch.cond`")

    # -- the rewrite ----------------------------------------------------------------------------
    def _rewrite(self, site: Site, pred: cst.BaseExpression, swapped: bool) -> list[Edit]:
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
                raise _Unfit("one branch returns while the other goes on: make both branches `return` "
                             "(or both assign the same variables), then use `torch.cond`")
            _check_pure(rest)
            if t_ret:
                false_body = false_body + rest
            else:
                true_body = true_body + rest
        returning = _always_returns(true_body)
        region = [stmt] + rest
        operands, outputs = self._dataflow(site, true_body, false_body, region, returning)
        t_name, f_name = self._names(site)
        params = cst.Parameters(params=[cst.Param(cst.Name(n)) for n in operands])
        if returning:
            arities: set = set()
            t_stmts = self._fix_returns(true_body, site, region, arities)
            f_stmts = self._fix_returns(false_body, site, region, arities)
            if len(arities) > 1:
                raise _Unfit("the branches return different structures; torch.cond needs the same structure in both")
        else:
            t_stmts = _without_pass(true_body) + [self._return_outputs(outputs, true_body, site, region)]
            f_stmts = _without_pass(false_body) + [self._return_outputs(outputs, false_body, site, region)]
        if swapped:
            t_stmts, f_stmts = f_stmts, t_stmts
            t_header, f_header = (stmt.orelse.body.header if isinstance(stmt.orelse, cst.Else) else None), stmt.body.header
        else:
            t_header, f_header = stmt.body.header, (stmt.orelse.body.header if isinstance(stmt.orelse, cst.Else) else None)
        was = " ".join(f"{'elif' if site.is_elif else 'if'} {code_of(stmt.test)}:".split())
        comment = "# Data-dependent branch" + (f" (was `{was}`)" if len(was) <= 60 else "") + \
            ": torch.cond keeps both branches for torch.export."
        leading = [] if site.is_elif else list(stmt.leading_lines)
        leading.append(cst.EmptyLine(comment=cst.Comment(comment)))

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
                raise _Unfit("its branches assign nothing that is used afterwards; remove the `if` or rewrite it by hand")
            both_t, both_f = _definitely(true_body), _definitely(false_body)
            for name in outputs:
                if name not in defined_before and not (name in both_t and name in both_f):
                    raise _Unfit(f"`{name}` is assigned in one branch only; assign it before the `if` or in both branches, then use `torch.cond`")
                kind = scope.kinds.get(name)
                if kind != TENSOR:
                    raise _Unfit(f"`{name}` is not surely a tensor ({kind}); torch.cond branches must return tensors: rewrite it by hand")
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
                raise _Unfit(f"a branch reassigns `{name}`, which is not a tensor; torch.cond operands must be tensors: rewrite it by hand")
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
                raise _Unfit("a branch returns nothing; torch.cond branches must return tensors")
            elements = [e.value for e in ret.value.elements] if isinstance(ret.value, cst.Tuple) else [ret.value]
            if isinstance(ret.value, cst.Tuple) and any(isinstance(e, cst.StarredElement) for e in ret.value.elements):
                raise _Unfit("a branch returns a starred tuple; rewrite it by hand")
            arities.add(len(elements) if isinstance(ret.value, cst.Tuple) else None)
            new_elements = []
            for e in elements:
                kind = site.analyzer.kind(e, site.scope)
                if kind != TENSOR:
                    raise _Unfit(f"a branch returns `{_short(e)}`, which is not surely a tensor ({kind}); torch.cond branches must return tensors")
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


_BOOL_OPS = {"any", "all", "isnan", "isinf", "isfinite", "isposinf", "isneginf", "isclose", "isreal", "signbit",
             "logical_and", "logical_or", "logical_not", "logical_xor", "eq", "ne", "lt", "le", "gt", "ge",
             "greater", "less", "greater_equal", "less_equal", "not_equal", "bool", "isin"}


def _is_bool(node: cst.BaseExpression) -> bool:
    """`node` surely gives a bool tensor."""
    if isinstance(node, cst.Comparison):
        return True
    if isinstance(node, cst.Call):
        func = node.func
        name = func.attr.value if isinstance(func, cst.Attribute) else func.value if isinstance(func, cst.Name) else ""
        return name in _BOOL_OPS
    if isinstance(node, cst.UnaryOperation) and isinstance(node.operator, cst.BitInvert):
        return _is_bool(node.expression)
    if isinstance(node, cst.BinaryOperation) and isinstance(node.operator, (cst.BitAnd, cst.BitOr, cst.BitXor)):
        return _is_bool(node.left) and _is_bool(node.right)
    return False


def _without_pass(stmts: list) -> list:
    return [s for s in stmts if not (isinstance(s, cst.SimpleStatementLine) and all(isinstance(b, cst.Pass) for b in s.body))]


def _pos(p) -> tuple[int, int]:
    return (p.line, p.column)


def _expressions(stmt: cst.CSTNode) -> list[cst.CSTNode]:
    if isinstance(stmt, cst.SimpleStatementLine):
        return [stmt]
    if isinstance(stmt, (cst.If, cst.While)):
        return [stmt.test]
    if isinstance(stmt, cst.For):
        return [stmt.iter]
    return []


def _unparen(node: cst.BaseExpression) -> cst.BaseExpression:
    if node.lpar:
        return node.with_changes(lpar=[], rpar=[])
    return node


def _atom(node: cst.BaseExpression) -> cst.BaseExpression:
    atomic = (cst.Name, cst.Attribute, cst.Call, cst.Subscript)
    if isinstance(node, atomic) or node.lpar:
        return node
    return node.with_changes(lpar=[cst.LeftParen()], rpar=[cst.RightParen()])


def _clone(node: cst.BaseExpression) -> cst.Call:
    return cst.Call(cst.Attribute(_atom(node), cst.Name("clone")))


def _short(node: cst.CSTNode) -> str:
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
    """Raise _Unfit where a branch does something torch.cond cannot hold."""
    for node in walk_statements(stmts):
        if isinstance(node, (cst.SimpleStatementLine, cst.If, cst.Pass, cst.Return)):
            continue
        if isinstance(node, (cst.Assign, cst.AnnAssign)):
            targets = [t.target for t in node.targets] if isinstance(node, cst.Assign) else [node.target]
            for target in targets:
                bad = _non_name_target(target)
                if bad is not None:
                    raise _Unfit(f"a branch assigns to `{_short(bad)}` (a side effect torch.cond cannot hold); "
                                 "compute the new value in both branches and assign it after the `if`")
            continue
        if isinstance(node, cst.AugAssign) and not isinstance(node.target, cst.Name):
            raise _Unfit(f"a branch updates `{_short(node.target)}` (state outside the branch), which torch.cond "
                         "cannot hold; compute the update with tensor ops outside the `if` (or drop it from exported code)")
        if isinstance(node, cst.AugAssign):
            raise _Unfit(f"a branch updates `{_short(node.target)}` in place (`{_short(node.operator).strip()}`), a side "
                         "effect torch.cond cannot hold; write `x = x + ...` (or move the update out of the branch)")
        if isinstance(node, cst.Expr):
            if isinstance(node.value, (cst.SimpleString, cst.ConcatenatedString)):
                continue
            raise _Unfit(f"a branch calls `{_short(node.value)}` for its side effect, which torch.cond cannot hold; "
                         "move it out of the branch")
        if isinstance(node, cst.Raise):
            raise _Unfit("a branch raises, which torch.cond cannot hold; check the condition with "
                         "`torch._check(<one-element bool tensor>.item(), lambda: msg)` instead of `if ...: raise`")
        if isinstance(node, (cst.For, cst.While)):
            raise _Unfit("a branch contains a loop; move the loop into a helper or restructure it, then use `torch.cond`")
        kind = type(node).__name__.lower()
        raise _Unfit(f"a branch contains a `{kind}` statement, which the rewrite cannot keep correct; "
                     "rewrite it with `torch.cond` by hand")
    for stmt in stmts:
        for call in _calls_in(stmt):
            func = call.func
            if isinstance(func, cst.Attribute) and re.fullmatch(r"[a-z0-9]\w*[a-z0-9]_", func.attr.value):
                raise _Unfit(f"a branch calls the in-place `{_short(func)}()`, which torch.cond cannot hold; "
                             f"use the out-of-place `{func.attr.value[:-1]}()`")
        for n in _named_exprs(stmt):
            raise _Unfit("a branch uses `:=`; rewrite it with `torch.cond` by hand")


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
