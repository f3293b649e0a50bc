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
    `torch.cond` (TSX401), which `torch.export` reports.
    """

    id = "TSX103"
    summary = "`@torch.jit.script_if_tracing` does nothing outside a TorchScript trace"
    applicability = Applicability.UNSAFE
    blocks_export = True

    VALID = [
        Valid("import torch\n\n\ndef f(x):\n    return x\n"),
        Valid("def script_if_tracing(f):\n    return f\n\n\n@script_if_tracing\ndef g():\n    pass\n"),
    ]
    INVALID = [
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
        if self.matches(decorator_target(node), "torch.jit.script_if_tracing"):
            self.report(
                node,
                "`@torch.jit.script_if_tracing` only mattered inside `torch.jit.trace`; remove it "
                "(torch.export runs the function as Python; a `torch.jit.trace` left in place would now bake "
                "its branches)",
                replacement=cst.RemovalSentinel.REMOVE,
            )
