import libcst as cst

from ts2export.rule import Applicability, Invalid, Rule, Valid

#: The module attributes whose value is the module's name, which is the same string everywhere.
_NAME_ATTRIBUTES = ("__name__",)


class JitModuleName(Rule):
    """
    ## What it does
    Rewrites `torch.jit.__name__` (however `torch.jit` is spelled) into the string it evaluates to,
    `"torch.jit"`.

    ## Why
    Code that picks a backend or a code path by name uses the module's name as a key
    (`backend == torch.jit.__name__`, `{torch.jit.__name__: trace}`; hummingbird-ml does both). The
    key is a string; the reference to the module is the only tie to TorchScript, and it fails once
    `torch.jit` is gone. The string keeps the key, and the code that still compiles with
    TorchScript (the `torch.jit.trace` that such a backend calls) is reported where it is.

    ## Example
    ```python
    if backend == torch.jit.__name__:
        model = torch.jit.trace(model, inputs)
    ```
    becomes
    ```python
    if backend == "torch.jit":
        model = torch.jit.trace(model, inputs)
    ```
    (the trace is another rule's finding).

    ## Fix safety
    Safe: `torch.jit.__name__` is `"torch.jit"` (a module's `__name__` is its import name), so the
    value is the same and nothing else changes. TorchScript compiles both as the same constant, so
    the fix is written also in code that stays compiled or traced.
    """

    id = "TSX002"
    summary = "`torch.jit.__name__` becomes the string `\"torch.jit\"`"
    applicability = Applicability.SAFE
    # the same string: code that torch.jit.script compiles (it takes `torch.jit.__name__` as a
    # constant) or torch.jit.trace traces computes the same (tests/test_keeps_torchscript.py)
    keeps_torchscript = True
    keeps_tracing = True

    VALID = [
        Valid("import torch\nname = torch.nn.__name__\n"),
        Valid("import torch\nname = torch.jit.script.__name__\n"),  # a function's name: not the module's
        Valid("jit = object()\nname = jit.__name__\n"),
    ]
    INVALID = [
        Invalid("import torch\nif backend == torch.jit.__name__:\n    x = torch.ones(1)\n",
                'import torch\nif backend == "torch.jit":\n    x = torch.ones(1)\n'),
        Invalid("from torch import jit\nBACKENDS = {jit.__name__: 1}\n", 'BACKENDS = {"torch.jit": 1}\n'),
        Invalid("import torch.jit as tj\nkey = tj.__name__.lower()\n", 'key = "torch.jit".lower()\n'),
    ]

    def visit_Attribute(self, node: cst.Attribute) -> None:
        if node.attr.value not in _NAME_ATTRIBUTES or self.in_import(node):
            return
        if self.matches(node.value, "torch.jit"):
            self.report(node, '`torch.jit.__name__` is the string "torch.jit": write the string, which does not '
                              "need TorchScript's module", replacement=cst.SimpleString('"torch.jit"'))
