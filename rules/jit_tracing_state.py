import libcst as cst

from ts2export.rule import Applicability, Invalid, Rule, Valid

_NAMES = ("torch._C._get_tracing_state", "torch.jit._get_tracing_state", "torch.jit._trace._get_tracing_state",
          "torch._C._set_tracing_state", "torch.jit._trace._set_tracing_state")


class JitTracingState(Rule):
    """
    ## What it does
    Reports `torch._C._get_tracing_state()` (also spelled `torch.jit._get_tracing_state`) and
    `torch._C._set_tracing_state(...)`.

    ## Why
    These private functions read or replace the state of the `torch.jit.trace` tracer: code used
    them to detect tracing (the state is not None), to annotate the traced graph, or to pause the
    tracer around a Python-only step. `torch.export` has no such state object. To detect export
    use `torch.compiler.is_exporting()`; to keep a step out of the captured graph, run it outside
    the exported module; for a custom operation, register it with `torch.library.custom_op`.

    ## Example
    ```python
    if torch._C._get_tracing_state():
        x = x.clone()
    ```
    is reported; write `if torch.compiler.is_exporting():` if the branch is meant for export.

    ## Fix safety
    Report only: what the code did with the tracer state decides the replacement.

    Report only. Left in code that an entry point exports, it holds that entry point back.
    """

    id = "TSX705"
    summary = "TorchScript tracer state (`torch._C._get_tracing_state`): no equivalent under torch.export"
    applicability = Applicability.NONE
    blocks_export = True
    triggers = ("tracing_state",)

    VALID = [Valid("import torch\nif torch.compiler.is_exporting():\n    pass\n")]
    INVALID = [
        Invalid("import torch\n\n\ndef f(x):\n    if torch._C._get_tracing_state():\n        x = x.clone()\n    return x\n", count=1),
        Invalid("import torch\nstate = torch._C._get_tracing_state()\ntorch._C._set_tracing_state(None)\n", count=2),
    ]

    def visit_Call(self, node: cst.Call) -> None:
        name = self.matches(node.func, *_NAMES)
        if not name:
            return
        self.report(
            node,
            f"`{name}()` uses the torch.jit.trace tracer's state, which torch.export does not have; detect export with "
            "`torch.compiler.is_exporting()` and keep Python-only steps outside the exported module",
        )
