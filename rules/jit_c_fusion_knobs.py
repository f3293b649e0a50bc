from ts2export.rule import Applicability, Invalid, Valid

from ._runtime_util import KnobRule


class JitCFusionKnobs(KnobRule):
    """
    ## What it does
    Removes statements that call TorchScript executor and fuser switches of `torch._C`:
    `_jit_set_texpr_fuser_enabled`, `_jit_override_can_fuse_on_cpu` / `_gpu` (and `_legacy`),
    `_jit_set_nvfuser_*`, `_jit_set_llga_enabled`, `_jit_set_profiling_executor`,
    `_jit_set_profiling_mode`, `_jit_set_num_profiled_runs`, `_jit_set_bailout_depth`,
    `_jit_set_fusion_strategy`, `_jit_set_te_*`, `_jit_set_texpr_*`, `_jit_texpr_set_fallback_allowed`,
    `_jit_set_autocast_mode`, `_jit_set_inline_everything_mode`, `_set_graph_executor_optimize`,
    `_debug_set_fusion_group_inlining`, `_debug_set_autodiff_subgraph_inlining`.

    ## Why
    These private switches configured TorchScript's graph executor and its fusers (legacy fuser,
    NNC, nvFuser, oneDNN Graph). Only that executor reads them: Inductor, `torch.export` and
    ExecuTorch have their own settings (`torch._inductor.config`, partitioners).

    ## Example
    ```python
    torch._C._jit_set_profiling_executor(True)
    torch._C._jit_override_can_fuse_on_cpu(True)
    model = load_model()
    ```
    becomes
    ```python
    model = load_model()
    ```

    ## Fix safety
    Safe: no code outside TorchScript reads these flags (checked on torch 2.13: Inductor, Dynamo
    and export only list them as functions not to trace). A program that still runs TorchScript
    goes back to the default executor and fuser: same results up to fused-kernel rounding, speed
    may differ. Where a call's value (often the previous setting) is used, it is reported, not
    removed. Other `torch._C._jit_*` calls (logging, ONNX) are left to the catch-all TSX001.

    The setting only changes how TorchScript runs code, never what it computes: it is written
    even where TorchScript still runs.
    """

    id = "TSX605"
    summary = "`torch._C._jit_set_*` fuser/executor switches: remove them"
    applicability = Applicability.SAFE
    triggers = ("_jit_", "graph_executor_optimize", "_debug_set_")
    STATEMENT_CALLS = (
        "torch._C._jit_set_texpr_fuser_enabled",
        "torch._C._jit_override_can_fuse_on_cpu",
        "torch._C._jit_override_can_fuse_on_cpu_legacy",
        "torch._C._jit_override_can_fuse_on_gpu",
        "torch._C._jit_set_llga_enabled",
        "torch._C._jit_set_profiling_executor",
        "torch._C._jit_set_profiling_mode",
        "torch._C._jit_set_num_profiled_runs",
        "torch._C._jit_set_bailout_depth",
        "torch._C._jit_set_fusion_strategy",
        "torch._C._jit_texpr_set_fallback_allowed",
        "torch._C._jit_set_autocast_mode",
        "torch._C._jit_set_inline_everything_mode",
        "torch._C._set_graph_executor_optimize",
        "torch._C._debug_set_fusion_group_inlining",
        "torch._C._debug_set_autodiff_subgraph_inlining",
    )
    STATEMENT_PREFIXES = ("torch._C._jit_set_nvfuser_", "torch._C._jit_set_te_", "torch._C._jit_set_texpr_")

    VALID = [
        Valid("import torch\ntorch._C._jit_set_logging_option('x')\n"),
        Valid("import torch\ntorch.set_num_threads(1)\n"),
    ]
    INVALID = [
        Invalid(
            "import torch\n\ntorch._C._jit_set_profiling_executor(True)\ntorch._C._jit_set_profiling_mode(True)\n"
            "torch._C._jit_override_can_fuse_on_cpu(True)\ntorch._C._jit_set_texpr_fuser_enabled(False)\n"
            "torch._C._jit_set_nvfuser_enabled(False)\nx = torch.ones(2)\n",
            "import torch\n\nx = torch.ones(2)\n",
            count=5,
        ),
        Invalid(
            "\"\"\"Setup.\"\"\"\nimport torch\n\n\ndef setup(on):\n    if on: torch._C._jit_set_texpr_fuser_enabled(True)\n    return on\n",
            "\"\"\"Setup.\"\"\"\n\n\ndef setup(on):\n    if on: pass\n    return on\n",
        ),
        Invalid(
            "import torch\nprev = torch._C._jit_set_profiling_executor(False)\n", count=1,
        ),
    ]
