from ts2export.rule import Applicability, Invalid, Valid

from ._runtime_util import KnobRule


class JitStrictFusion(KnobRule):
    """
    ## What it does
    Removes the context manager `torch.jit.strict_fusion()`: a `with` statement with only this
    item is replaced by its body (un-indented); with other items, only this item goes.

    ## Why
    Inside scripted code, `with torch.jit.strict_fusion():` made TorchScript fail when the block's
    operators were not all fused (or symbolically differentiated). Outside TorchScript it does
    nothing but warn "Only works in script mode". Inductor has no per-block equivalent; inspect
    its output (`TORCH_LOGS=output_code`) to check fusion.

    ## Example
    ```python
    def forward(self, x):
        with torch.jit.strict_fusion():
            return x + x + x
    ```
    becomes
    ```python
    def forward(self, x):
        return x + x + x
    ```

    ## Fix safety
    Safe: its `__enter__`/`__exit__` do nothing outside TorchScript (torch 2.13 source; checked by
    running it). Code that still runs scripted loses the fusion assertion, not a result.

    The setting only changes how TorchScript runs code, never what it computes: it is written
    even where TorchScript still runs.
    """

    id = "TSX608"
    summary = "`with torch.jit.strict_fusion()`: TorchScript fusion assertion, remove it"
    applicability = Applicability.SAFE
    CONTEXT_MANAGERS = ("torch.jit.strict_fusion",)

    VALID = [Valid("import torch\nwith torch.no_grad():\n    y = torch.ones(1)\n")]
    INVALID = [
        Invalid(
            "import torch\n\n\ndef f(x):\n    with torch.jit.strict_fusion():\n        return torch.relu(x + x)\n",
            "import torch\n\n\ndef f(x):\n    return torch.relu(x + x)\n",
        ),
        Invalid(
            "import torch\n\n\ndef f(x):\n    with torch.jit.strict_fusion(): return torch.relu(x)\n",
            "import torch\n\n\ndef f(x):\n    return torch.relu(x)\n",
        ),
    ]
