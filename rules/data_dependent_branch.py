from __future__ import annotations

import libcst as cst

from ts2export.rule import Applicability, Import, Invalid, Rule, Valid

from ._cond_rewrite import CondRewrite, Unfit, atom, short, statement_expressions, unparen
from ._control_flow import DATA, DEPENDENT, TENSOR, Scope, code_of, is_builtin_call
from ._module_walk import Site, is_module_class, screened_base_names, module_sites, torch_names


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
    `self.training`, `mask is None`) are left alone: `torch.export` handles them; except the sizes
    of a tensor whose shape depends on its data (made by `torch.nonzero`, `masked_select`, `unique`,
    `argwhere`, a boolean mask `x[x > 0]`, or computed from one): a decision on them is reported.

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
    tensor (`and` / `or`, chained comparisons): split them or combine with `&` / `|` by hand, and
    conditions on a data-dependent size (export stops there with `GuardOnDataDependentSymNode`).

    ## Fix safety
    Unsafe: the structure of the code changes. `torch.cond` needs both branches to produce tensors of
    the same dtype (export fails, `RuntimeError when making fake tensor call`, otherwise): where one
    branch surely converts an output (`.double()`, `.to(torch.float16)`, a comparison's bool, a
    method of the module whose one `return` does) and the other does not, or to another dtype, the
    `if` is reported and left as it is; a dtype that differs through another call is not caught (a recording's proof, replayed on the
    rewritten code, is: `apply --recording`). The predicate becomes a tensor: `t.item() > c` turns into `t > c`, which compares in `t`'s dtype
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
    trace_takes_one_path = True  # a trace kept the branch its example took; torch.cond keeps both
    # export's guard on the condition's value, which torch.cond does not need
    proof_failures = ("GuardOnDataDependentSymNode", "data-dependent expression")
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
        # the size of a tensor made by nonzero / a boolean mask depends on the data: reported
        Invalid(
            "import torch\nfrom torch import nn\n\n\nclass Matcher(nn.Module):\n    def forward(self, sim):\n"
            "        idx = torch.nonzero(sim > 0.5)\n        if idx.shape[0] == 0:\n            return sim.new_zeros(1, 2)\n"
            "        kept = sim[sim > 0.5]\n        if len(kept) > 3 or kept.numel() == 1:\n            return kept[:3]\n"
            "        return idx\n",
            None,
            count=2,
        ),
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
        # reported, left alone: the branches give the output different dtypes
        Invalid(
            "import torch\n\n\nclass Net(torch.nn.Module):\n"
            "    def forward(self, x):\n"
            "        if x.mean() > 0:\n            y = (x * 2).double()\n        else:\n            y = x + 1\n"
            "        return y\n",
            count=1,
        ),
        # ... also where a method of the module converts it (its one `return` says)
        Invalid(
            "import torch\n\n\nclass Net(torch.nn.Module):\n"
            "    def forward(self, x):\n"
            "        if x.mean() > 0:\n            return self.half_of(x)\n        return x + 1\n\n"
            "    def half_of(self, t):\n        return (t / 2).to(torch.float16)\n",
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
        # reported, left alone: a decision on the number of rows a helper of the file made with
        # `nonzero` and a boolean mask (its `return` says so)
        Invalid(
            "import torch\n\n\ndef mutual(d):\n"
            "    vals, idx = d.min(1)\n    keep = vals < 0.5\n"
            "    return torch.stack([torch.nonzero(keep).squeeze(1), idx[keep]], 1)\n\n\n"
            "class Matcher(torch.nn.Module):\n"
            "    def forward(self, a, b):\n"
            "        m = mutual(torch.cdist(a, b))\n"
            "        if m.size(0) == 0:\n            return torch.zeros(1, 2, dtype=torch.long)\n"
            "        return m\n",
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
        self._functions: dict[str, cst.FunctionDef] = {}
        self._cond = CondRewrite(self.position)

    # -- traversal ------------------------------------------------------------------------------
    def visit_Module(self, node: cst.Module) -> None:
        self._functions = {s.name.value: s for s in node.body if isinstance(s, cst.FunctionDef)}

    def visit_ClassDef(self, node: cst.ClassDef) -> None:
        if not is_module_class(node, screened_base_names(self), self._local_modules):
            return
        self._local_modules.add(node.name.value)
        for site in module_sites(node, torch_names(self), self._local_modules, self._functions):
            for expr in statement_expressions(site.stmt):
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
                    f"`... if {short(ifexp.test)} else ...` depends on a tensor value, which torch.export cannot "
                    "trace; use `torch.where(cond, a, b)` (same shapes) or `torch.cond` by hand",
                )

    def _check_if(self, site: Site) -> None:
        stmt = site.stmt
        assert isinstance(stmt, cst.If)
        analyzer, scope = site.analyzer, site.scope
        if analyzer.kind(stmt.test, scope) not in DEPENDENT:
            return
        head = f"`{'elif' if site.is_elif else 'if'} {short(stmt.test)}:` depends on a tensor value, which torch.export cannot trace"
        try:
            pred, swapped = self._predicate(stmt.test, scope, site)
            self._check_raise(stmt, pred, swapped)
            edits = self._cond.rewrite(site, pred, swapped)
        except Unfit as why:
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
            holds = code_of(atom(pred)) + ("" if isinstance(pred, cst.Comparison) else ".bool()")
            if isinstance(pred, cst.Comparison):
                holds = f"({code_of(pred)})"
        else:
            holds = f"torch.logical_not({code_of(pred)})"
        raise Unfit(f"a branch that raises cannot go into torch.cond; check the condition with "
                     f"`torch._check({holds}.item(), lambda: {message})` instead (it raises RuntimeError)")

    # -- the predicate --------------------------------------------------------------------------
    def _predicate(self, test: cst.BaseExpression, scope: Scope, site: Site) -> tuple[cst.BaseExpression, bool]:
        """A one-tensor predicate equivalent to `test`, and whether it is negated (branches swap)."""
        swapped = False
        while isinstance(test, cst.UnaryOperation) and isinstance(test.operator, cst.Not):
            test, swapped = unparen(test.expression), not swapped
        analyzer = site.analyzer
        kind = analyzer.kind(test, scope)
        if isinstance(test, cst.BooleanOperation):
            raise Unfit("combine the conditions into one tensor with `&` / `|` (or nest two `if`s), then rewrite it with `torch.cond`")
        if isinstance(test, cst.Comparison) and len(test.comparisons) > 1:
            raise Unfit("split the chained comparison into one tensor (`(a < t) & (t < b)`), then use `torch.cond`")
        pred = unparen(test) if kind == TENSOR else unparen(self._tensorize(test, scope, site))
        if not _is_bool(pred):
            # Python's truth of a number is `!= 0`; torch.cond wants a bool (ExecuTorch fails on others).
            pred = cst.Call(cst.Attribute(atom(pred), cst.Name("bool")))
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
                        return cst.Call(cst.Attribute(atom(inner), cst.Name("long")))
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
        ragged = analyzer.ragged_size(node, scope)
        if ragged is not None:
            raise Unfit(f"`{short(node)}` is the size of `{short(ragged)}`, which depends on the values of the data "
                        "(`nonzero`, a boolean mask, `unique`, ...): torch.export cannot take a Python decision on it "
                        "(GuardOnDataDependentSymNode); compute without the branch (a fixed-size result, padding) "
                        "or keep the module TorchScript")
        raise Unfit(f"`{short(node)}` is a Python value read out of a tensor; express the condition as a "
                     "one-element tensor (e.g. `t > 0` instead of `t.item() > 0`), then use `torch.cond`")


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
