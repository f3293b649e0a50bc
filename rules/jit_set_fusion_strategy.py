from ts2export.rule import Applicability, Invalid, Valid

from ._runtime_util import KnobRule


class JitSetFusionStrategy(KnobRule):
    """
    ## What it does
    Removes the statement `torch.jit.set_fusion_strategy(...)`.

    ## Why
    `torch.jit.set_fusion_strategy([("STATIC", 2), ("DYNAMIC", 10)])` told TorchScript's profiling
    executor how many shape specialisations to compile before falling back. Only that executor
    reads the setting (`torch._C._jit_set_fusion_strategy`); `torch.compile` and `torch.export`
    decide about static and dynamic shapes themselves (`dynamic=` / `dynamic_shapes=`).

    ## Example
    ```python
    torch.jit.set_fusion_strategy([("DYNAMIC", 20)])
    model = torch.jit.script(Net())
    ```
    becomes
    ```python
    model = torch.jit.script(Net())
    ```

    ## Fix safety
    Safe: no code outside TorchScript reads the setting (checked on torch 2.13). A program that
    still runs TorchScript gets the default strategy: same results up to fused-kernel rounding,
    possibly different speed. Where the call's value (the previous strategy) is used, it is
    reported, not removed.

    The setting only changes how TorchScript runs code, never what it computes: it is written
    even where TorchScript still runs.
    """

    id = "TSX604"
    summary = "`torch.jit.set_fusion_strategy(...)`: TorchScript executor setting, remove it"
    applicability = Applicability.SAFE
    STATEMENT_CALLS = ("torch.jit.set_fusion_strategy", "torch.jit._set_fusion_strategy", "torch.jit._fuser.set_fusion_strategy")

    VALID = [Valid("def set_fusion_strategy(s):\n    return s\nset_fusion_strategy([])\n")]
    INVALID = [
        Invalid(
            "import torch\ntorch.jit.set_fusion_strategy([('STATIC', 2), ('DYNAMIC', 10)])\nx = torch.ones(1)\n",
            "import torch\nx = torch.ones(1)\n",
        ),
        Invalid(
            "\"\"\"Setup.\"\"\"\nimport torch\n\n\ndef setup():\n    torch.jit.set_fusion_strategy([('DYNAMIC', 20)])\n",
            "\"\"\"Setup.\"\"\"\n\n\ndef setup():\n    pass\n",
        ),
        Invalid("import torch\nold = torch.jit.set_fusion_strategy([('STATIC', 1)])\n", count=1),
    ]
