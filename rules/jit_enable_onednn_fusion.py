from ts2export.rule import Applicability, Invalid, Valid

from ._runtime_util import KnobRule


class JitEnableOnednnFusion(KnobRule):
    """
    ## What it does
    Removes the statement `torch.jit.enable_onednn_fusion(...)`.

    ## Why
    It switched on oneDNN Graph (LLGA) fusion in TorchScript's profiling executor
    (`torch._C._jit_set_llga_enabled`); nothing else reads the flag. On CPU the new stack fuses
    through Inductor (`torch.compile`, AOTInductor; `torch._inductor.config.cpp` settings) or an
    ExecuTorch delegate (XNNPACK).

    ## Example
    ```python
    torch.jit.enable_onednn_fusion(True)
    ```
    is removed.

    ## Fix safety
    Safe: outside TorchScript nothing reads the flag (checked on torch 2.13). A program that still
    runs TorchScript loses the oneDNN fusion: same results up to fused-kernel rounding, possibly
    slower.

    The setting only changes how TorchScript runs code, never what it computes: it is written
    even where TorchScript still runs.
    """

    id = "TSX606"
    summary = "`torch.jit.enable_onednn_fusion(...)`: TorchScript-only fuser switch, remove it"
    applicability = Applicability.SAFE
    STATEMENT_CALLS = ("torch.jit.enable_onednn_fusion",)

    VALID = [Valid("import torch\nenabled = torch.backends.mkldnn.is_available()\n")]
    INVALID = [
        Invalid(
            "import torch\ntorch.jit.enable_onednn_fusion(True)\ny = torch.zeros(1)\n",
            "import torch\ny = torch.zeros(1)\n",
        ),
    ]
