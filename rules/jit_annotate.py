import libcst as cst

from ts2export.rule import Applicability, Invalid, Rule, Valid, argument


class JitAnnotate(Rule):
    """
    ## What it does
    Replaces `torch.jit.annotate(T, value)` with `value`.

    ## Why
    `torch.jit.annotate` only told the TorchScript compiler the type of an empty container or a
    `None`. In eager Python and under `torch.export` it returns `value` unchanged, so the call is
    noise that keeps a dependency on the deprecated `torch.jit` namespace.

    ## Example
    ```python
    cache = torch.jit.annotate(List[Tensor], [])
    ```
    becomes
    ```python
    cache = []
    ```
    Where you want to keep the type for a type checker, annotate the variable:
    `cache: List[Tensor] = []`.

    ## Fix safety
    Safe: `torch.jit.annotate` returns its second argument unchanged in eager mode.

    Where an entry point that stays TorchScript still compiles the code, the fix is held back:
    `torch.jit.annotate(List[int], [])` becomes `[]`, which TorchScript types as a list of
    tensors. A trace is not affected.
    """

    id = "TSX201"
    summary = "`torch.jit.annotate(T, v)` is `v` outside TorchScript"
    applicability = Applicability.SAFE
    keeps_tracing = True

    VALID = [
        Valid("import torch\nx: list = []\n"),
        Valid("def annotate(t, v):\n    return v\nx = annotate(int, 3)\n"),
        Valid("import typing\nx = typing.cast(int, 3)\n"),
    ]
    INVALID = [
        Invalid(
            "import torch\nfrom typing import List\nx = torch.jit.annotate(List[int], [])\nt = torch.ones(1)\n",
            "import torch\nx = []\nt = torch.ones(1)\n",
        ),
        Invalid(
            "from torch.jit import annotate\nfrom typing import Dict\nd = annotate(Dict[str, int], {})\nuse: Dict[str, int] = d\n",
            "from typing import Dict\nd = {}\nuse: Dict[str, int] = d\n",
        ),
        Invalid(
            "import torch as th\ny = th.jit.annotate(int, 3) + 1\n",
            "y = 3 + 1\n",
        ),
        Invalid(
            "import torch\nz = torch.jit.annotate(int, 1 if True else 2) * 2\nt = torch.ones(1)\n",
            "import torch\nz = (1 if True else 2) * 2\nt = torch.ones(1)\n",
        ),
    ]

    def visit_Call(self, node: cst.Call) -> None:
        if not self.matches(node.func, "torch.jit.annotate"):
            return
        value = argument(node, 1, "the_value")
        if value is None:
            self.report(node, "`torch.jit.annotate(T, v)` without a value: replace it by the value by hand")
            return
        self.report(
            node,
            "`torch.jit.annotate(T, v)` only typed `v` for TorchScript; use `v` (annotate the variable if the type matters)",
            replacement=self.substitute(node, value),
        )

