import libcst as cst

from ts2export.rule import Applicability, Invalid, Rule, Valid

from ts2export.rules._catalog_types_util import decorator_target


class JitScriptIfTracing(Rule):
    """
    ## What it does
    Removes the decorator `@torch.jit.script_if_tracing`.

    ## Why
    `@torch.jit.script_if_tracing` compiled a function with `torch.jit.script` only while
    `torch.jit.trace` was running, so that its control flow survived the trace. Outside a
    TorchScript trace the wrapper calls the function as it is. `torch.export` does not run under
    `torch.jit.is_tracing()`, so the decorator does nothing there; data-dependent control flow
    in the function has to become `torch.cond` (export reports where).

    ## Example
    ```python
    @torch.jit.script_if_tracing
    def pad_to(x, n: int):
        return x if x.size(0) >= n else torch.cat([x, x.new_zeros(n - x.size(0))])
    ```
    becomes
    ```python
    def pad_to(x, n: int):
        return x if x.size(0) >= n else torch.cat([x, x.new_zeros(n - x.size(0))])
    ```

    ## Fix safety
    Unsafe. In eager Python and under `torch.export` nothing changes: outside a TorchScript trace
    the wrapper returns `fn(*args, **kwargs)`. But while the program still builds its artifact
    with `torch.jit.trace`, the trace now records the branch taken on the example input instead
    of scripting it (verified: a function `if x.sum() > 0: return x * 2` / `return -x`, traced on
    `torch.ones(2)`, then returns `[-2, -2]` for `-torch.ones(2)` instead of `[1, 1]`). Apply it
    together with the rewrite of the trace (TSX301); data-dependent branches then need
    `torch.cond` (TSX401), which `torch.export` reports. A function that reads tensor values into
    Python (`int(boxes[i, 0])`, `.item()`, `.tolist()`) is reported without a fix: removing the
    decorator would only move the failure to export time, so the trace that calls it stays too
    (the program model holds it back). Where the code is still traced by a `torch.jit.trace` that
    stays, the fix is held back (it would change the trace).

    Where a `torch.jit.trace` that stays still runs the function, the fix is held back (the
    trace would bake its branches). A function that reads tensor values is reported without a
    fix, and the trace that reaches it is held back too.
    """

    id = "TSX103"
    summary = "`@torch.jit.script_if_tracing` does nothing outside a TorchScript trace"
    applicability = Applicability.UNSAFE
    unit_site = True
    blocks_export = True

    VALID = [
        Valid("import torch\n\n\ndef f(x):\n    return x\n"),
        Valid("def script_if_tracing(f):\n    return f\n\n\n@script_if_tracing\ndef g():\n    pass\n"),
    ]
    INVALID = [
        Invalid(
            "import torch\n\n\n@torch.jit.script_if_tracing\ndef first_rows(boxes, x):\n    out = []\n"
            "    for i in range(boxes.shape[0]):\n        out.append(x[: int(boxes[i, 0])].sum(0))\n"
            "    return torch.stack(out)\n",
            None,
            count=1,
        ),
        Invalid(
            "import torch\n\n\n@torch.jit.script_if_tracing\ndef f(x):\n    return x + 1\n\n\ny = f(torch.ones(1))\n",
            "import torch\n\n\ndef f(x):\n    return x + 1\n\n\ny = f(torch.ones(1))\n",
            unsafe=True,
        ),
        Invalid(
            "from torch.jit import script_if_tracing as sit\n\n\nclass A:\n    @staticmethod\n    @sit\n    def f(x):\n        return x\n",
            "class A:\n    @staticmethod\n    def f(x):\n        return x\n",
            unsafe=True,
        ),
    ]

    def visit_Decorator(self, node: cst.Decorator) -> None:
        if not self.matches(decorator_target(node), "torch.jit.script_if_tracing"):
            return
        fn = self.parent(node)
        reads = _value_reads(fn) if isinstance(fn, cst.FunctionDef) else []
        if reads:
            line = self.position(reads[0]).start.line
            self.report(
                node,
                f"`@torch.jit.script_if_tracing` kept the control flow of `{fn.name.value}` alive in a trace, and the "
                f"function reads tensor values into Python (`{self.shown(reads[0])}` at line {line}): torch.export "
                "stops there with a data-dependent guard (GuardOnDataDependentSymNode), so removing the decorator only "
                "moves the failure to export time. Rewrite that part with tensor operations (or `torch._check` the "
                "values); until then the decorator and the trace that calls the function stay",
            )
            return
        self.report(
            node,
            "`@torch.jit.script_if_tracing` only mattered inside `torch.jit.trace`; remove it "
            "(torch.export runs the function as Python; a `torch.jit.trace` left in place would now bake "
            "its branches)",
            replacement=cst.RemovalSentinel.REMOVE,
        )


#: Size queries: reading them into Python is what export handles (symbolic sizes).
_SIZE_ATTRS = {"shape", "size", "dim", "ndim", "numel", "__len__"}


def _value_reads(fn: cst.FunctionDef) -> list[cst.CSTNode]:
    """Places where the function turns tensor values into Python values: `.item()`, `.tolist()`,
    `.numpy()`, and `int(...)`/`float(...)`/`bool(...)` of anything but a size or a literal."""
    found: list[cst.CSTNode] = []

    def is_size(expr: cst.BaseExpression) -> bool:
        if isinstance(expr, (cst.Integer, cst.Float, cst.SimpleString)):
            return True
        if isinstance(expr, cst.Call) and isinstance(expr.func, cst.Name) and expr.func.value == "len":
            return True
        if isinstance(expr, cst.Call) and isinstance(expr.func, cst.Attribute):
            return expr.func.attr.value in _SIZE_ATTRS
        if isinstance(expr, cst.Subscript):
            return isinstance(expr.value, cst.Attribute) and expr.value.attr.value in _SIZE_ATTRS or is_size(expr.value)
        if isinstance(expr, cst.Attribute):
            return expr.attr.value in _SIZE_ATTRS
        return False

    class _V(cst.CSTVisitor):
        def visit_Call(self, node: cst.Call) -> None:
            func = node.func
            if isinstance(func, cst.Attribute) and func.attr.value in ("item", "tolist", "numpy") and not node.args:
                found.append(node)
            elif (isinstance(func, cst.Name) and func.value in ("int", "float", "bool") and len(node.args) == 1
                  and not is_size(node.args[0].value)):
                found.append(node)

    fn.body.visit(_V())
    return found
