from ts2export.rule import Applicability, Invalid, Valid

from ._runtime_util import KnobRule


class JitOptimizedExecution(KnobRule):
    """
    ## What it does
    Removes the context manager `torch.jit.optimized_execution(flag)`: a `with` statement with
    only this item is replaced by its body (un-indented); with other items, only this item goes.

    ## Why
    It switched the optimisation passes of TorchScript's graph executor on or off for the block
    (`torch._C._set_graph_executor_optimize`). Only that executor reads the flag.

    ## Example
    ```python
    with torch.jit.optimized_execution(False):
        out = model(x)
    ```
    becomes
    ```python
    out = model(x)
    ```

    ## Fix safety
    Safe: outside TorchScript the block runs the same with or without it (checked on torch 2.13).
    A program that still runs TorchScript in the block now runs it with the executor's
    optimisations on (the default): same results up to fused-kernel rounding. A `with ... as
    name:` item is reported, not removed. Called as a statement of its own outside a `with`
    (`torch.jit.optimized_execution(model)`, as hummingbird-ml does), it never ran: the call only
    builds the context manager. That statement is removed where its arguments are names or
    literals (evaluating them runs no code); otherwise it is reported.

    The setting only changes how TorchScript runs code, never what it computes: it is written
    even where TorchScript still runs.
    """

    id = "TSX607"
    summary = "`with torch.jit.optimized_execution(...)`: TorchScript executor switch, remove it"
    applicability = Applicability.SAFE
    CONTEXT_MANAGERS = ("torch.jit.optimized_execution", "torch.jit._fuser.optimized_execution")
    INERT_CALLS = CONTEXT_MANAGERS

    VALID = [Valid("import torch\nwith torch.inference_mode():\n    y = torch.ones(1)\n")]
    INVALID = [
        Invalid(
            "import torch\n\n\ndef run(m, x):\n    with torch.jit.optimized_execution(False):\n        out = m(x)\n"
            "    return torch.relu(out)\n",
            "import torch\n\n\ndef run(m, x):\n    out = m(x)\n    return torch.relu(out)\n",
        ),
        # outside a `with`: the call builds a context manager and drops it, nothing runs
        Invalid(
            "import torch\n\n\ndef build(m):\n    m = m.to(torch.float32)\n    torch.jit.optimized_execution(m)\n    return m\n",
            "import torch\n\n\ndef build(m):\n    m = m.to(torch.float32)\n    return m\n",
        ),
        # an argument whose evaluation runs code: reported only
        Invalid("import torch\n\n\ndef build(m):\n    torch.jit.optimized_execution(m.eval())\n", count=1),
    ]
