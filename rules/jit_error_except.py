import libcst as cst

from ts2export.rule import Applicability, Invalid, Rule, Valid

_ERROR = ("torch.jit.Error", "torch._C.JITException")


class JitErrorExcept(Rule):
    """
    ## What it does
    Reports `except torch.jit.Error` handlers (alone or in a tuple).

    ## Why
    Every `raise` and every failed `assert` inside scripted code reached Python as
    `torch.jit.Error`, whatever its type in the source (checked on torch 2.13: a scripted
    `raise ValueError(...)` and a failed `assert` both arrive as `torch.jit.Error`; errors of
    tensor operators stay `RuntimeError`). Once the model runs as Python (eager or
    `torch.export`), the same failures keep their own types -- `ValueError`, `AssertionError`,
    ... -- and this handler no longer catches them.

    ## Example
    ```python
    try:
        y = scripted(x)
    except torch.jit.Error as e:
        log(e)
    ```
    Name the exceptions the model raises instead, e.g. `except (ValueError, AssertionError) as e:`.

    ## Fix safety
    Report only: which exception types the guarded code raises after migration depends on the
    model's source, which is usually in another file.

    Report only.
    """

    id = "TSX505"
    summary = "`except torch.jit.Error` no longer catches the model's errors outside TorchScript"
    triggers = ("jit", "JITException")
    applicability = Applicability.NONE

    VALID = [
        Valid("try:\n    pass\nexcept RuntimeError:\n    pass\n"),
        Valid("import torch\nraise torch.jit.Error('x')\n"),
    ]
    INVALID = [
        Invalid("import torch\ntry:\n    pass\nexcept torch.jit.Error as e:\n    print(e)\n", count=1),
        Invalid("import torch\ntry:\n    pass\nexcept (ValueError, torch.jit.Error):\n    pass\n", count=1),
    ]

    def visit_ExceptHandler(self, node: cst.ExceptHandler) -> None:
        kind = node.type
        if kind is None:
            return
        names = [e.value for e in kind.elements] if isinstance(kind, cst.Tuple) else [kind]
        for name in names:
            if self.matches(name, *_ERROR):
                self.report(
                    name,
                    "`except torch.jit.Error`: outside TorchScript the model's `raise`/`assert` keep their own types "
                    "(ValueError, AssertionError, ...); catch those instead",
                )
