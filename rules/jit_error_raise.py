import libcst as cst

from ts2export.rule import Applicability, Invalid, Rule, Valid

_ERROR = ("torch.jit.Error", "torch._C.JITException")


class JitErrorRaise(Rule):
    """
    ## What it does
    Replaces `raise torch.jit.Error(...)` with `raise RuntimeError(...)`.

    ## Why
    `torch.jit.Error` (`torch._C.JITException`) is the exception TorchScript raises in Python when
    scripted code fails. Raising it by hand ties eager code to `torch.jit`, and the statement
    cannot even be compiled by TorchScript ("Unknown builtin op: aten::JITException"), so such
    code only ever ran as Python.

    ## Example
    ```python
    raise torch.jit.Error("bad shape")
    ```
    becomes
    ```python
    raise RuntimeError("bad shape")
    ```

    ## Fix safety
    Unsafe: the exception type changes. `torch.jit.Error` derives from `Exception`, not from
    `RuntimeError` (checked on torch 2.13), so a handler `except torch.jit.Error` no longer
    catches it (TSX505 reports such handlers) while `except RuntimeError` now does. Pick a more
    specific type (`ValueError`, ...) if callers distinguish errors.

    A trace is not affected. Code that TorchScript still compiles could not hold `raise
    torch.jit.Error` (it does not script), so the fix is held back there as a precaution.
    """

    id = "TSX504"
    summary = "`raise torch.jit.Error(...)` becomes `raise RuntimeError(...)`"
    triggers = ("jit", "JITException")
    applicability = Applicability.UNSAFE
    keeps_tracing = True

    VALID = [
        Valid("raise RuntimeError('x')\n"),
        Valid("import torch\ntry:\n    pass\nexcept torch.jit.Error:\n    pass\n"),
    ]
    INVALID = [
        Invalid(
            "\"\"\"Checks.\"\"\"\nimport torch\n\n\ndef check(x):\n    if x.dim() != 2:\n        raise torch.jit.Error(f'bad rank {x.dim()}')\n",
            "\"\"\"Checks.\"\"\"\n\n\ndef check(x):\n    if x.dim() != 2:\n        raise RuntimeError(f'bad rank {x.dim()}')\n",
            unsafe=True,
        ),
        Invalid(
            "\"\"\"Checks.\"\"\"\nfrom torch.jit import Error\n\n\ndef fail():\n    raise Error\n",
            "\"\"\"Checks.\"\"\"\n\n\ndef fail():\n    raise RuntimeError\n",
            unsafe=True,
        ),
    ]

    def visit_Raise(self, node: cst.Raise) -> None:
        exc = node.exc
        target = exc.func if isinstance(exc, cst.Call) else exc
        if exc is None or not self.matches(target, *_ERROR):
            return
        self.report(
            target,
            "`raise torch.jit.Error(...)`: torch.jit.Error is TorchScript's error type (an Exception, not a "
            "RuntimeError); raise `RuntimeError` or a more specific built-in exception",
            replacement=cst.Name("RuntimeError", lpar=target.lpar, rpar=target.rpar),
        )
