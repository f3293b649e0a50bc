import libcst as cst

from ts2export.rule import Applicability, Invalid, Rule, Valid


class JitIgnoreUnusedDecorator(Rule):
    """
    ## What it does
    Removes the decorators `@torch.jit.unused` and `@torch.jit.ignore` (with or without `drop=`).

    ## Why
    Both only told the TorchScript compiler to leave a method alone (`ignore`: call it as Python;
    `unused`/`drop=True`: replace it with a stub that raises). Eager Python and `torch.export`
    run the method as it is written, so the decorators do nothing but keep `torch.jit` alive.

    ## Example
    ```python
    class Net(nn.Module):
        @torch.jit.unused
        def debug(self, x):
            return x.numpy()
    ```
    becomes
    ```python
    class Net(nn.Module):
        def debug(self, x):
            return x.numpy()
    ```

    ## Fix safety
    Safe: in eager mode both decorators return the function unchanged (they only set an attribute
    that the TorchScript compiler reads). Code that `torch.export` traces through such a method now
    runs it for real; if it held Python-only code that TorchScript skipped, export says so.
    One caveat: while some code still calls `torch.jit.script` on the class (call sites are unsafe
    fixes, so a safe-only `apply` keeps them), TorchScript now compiles the method and fails loudly
    at script time if it holds Python-only code. Migrate the call sites in the same change
    (`apply --unsafe-fixes`) or keep the decorator with `# ts2export: ignore[TSX101]`.

    Where an entry point that stays TorchScript still compiles the method, the fix is held back:
    TorchScript would then compile the method, and Python-only code in it fails at script time.
    It keeps a trace that stays the same (the trace runs the method as Python either way).
    """

    id = "TSX101"
    summary = "`@torch.jit.unused` / `@torch.jit.ignore` mean nothing outside TorchScript"
    applicability = Applicability.SAFE
    keeps_tracing = True

    VALID = [
        Valid("import functools\n@functools.lru_cache\ndef f(x):\n    return x\n"),
        Valid("def ignore(f):\n    return f\n@ignore\ndef g():\n    pass\n"),
    ]
    INVALID = [
        Invalid(
            "import torch\n\n\nclass Net(torch.nn.Module):\n    @torch.jit.unused\n    def debug(self, x):\n        return x\n",
            "import torch\n\n\nclass Net(torch.nn.Module):\n    def debug(self, x):\n        return x\n",
        ),
        Invalid(
            "import torch\nfrom torch.jit import ignore\n\n\nclass Net(torch.nn.Module):\n"
            "    @ignore(drop=True)\n    def debug(self, x):\n        return x\n",
            "import torch\n\n\nclass Net(torch.nn.Module):\n    def debug(self, x):\n        return x\n",
        ),
        Invalid(
            "import torch.jit as jit\nimport functools\n\n\n@functools.wraps(print)\n@jit.ignore\ndef f():  # keep\n    pass\n",
            "import functools\n\n\n@functools.wraps(print)\ndef f():  # keep\n    pass\n",
        ),
    ]

    def visit_Decorator(self, node: cst.Decorator) -> None:
        target = node.decorator.func if isinstance(node.decorator, cst.Call) else node.decorator
        name = self.matches(target, "torch.jit.unused", "torch.jit.ignore")
        if name:
            short = name.rsplit(".", 1)[1]
            self.report(
                node,
                f"`@torch.jit.{short}` only steered the TorchScript compiler; remove it",
                replacement=cst.RemovalSentinel.REMOVE,
            )
