import libcst as cst

from ts2export.rule import Applicability, Import, Invalid, Rule, Valid

_NAMES = ("torch.jit.is_tracing", "torch._C._is_tracing", "torch.jit._trace.is_tracing")


class JitIsTracing(Rule):
    """
    ## What it does
    Replaces `torch.jit.is_tracing()` with `torch.compiler.is_exporting()`.

    ## Why
    Code asked `torch.jit.is_tracing()` to behave differently while `torch.jit.trace` recorded
    it: typically to keep a size as a tensor, to skip a Python-side check, or to avoid a
    data-dependent branch that a trace would bake in. With `torch.export`, the same moment is
    "being exported", which `torch.compiler.is_exporting()` reports.

    ## Example
    ```python
    if torch.jit.is_tracing():
        n = x.shape[0]
    ```
    becomes
    ```python
    if torch.compiler.is_exporting():
        n = x.shape[0]
    ```

    ## Fix safety
    Unsafe: the two functions answer different questions (checked on torch 2.13):

    | where the code runs            | `torch.jit.is_tracing()` | `torch.compiler.is_exporting()` |
    |--------------------------------|--------------------------|---------------------------------|
    | eager Python                   | False                    | False                           |
    | `torch.jit.trace`              | True                     | False                           |
    | `torch.jit.script` (scripted)  | False                    | cannot be scripted              |
    | `torch.export.export` (strict and non-strict) | False     | True                            |
    | `torch.compile`                | False                    | False                           |

    So after the fix the guarded branch runs while exporting instead of while tracing. It must
    be valid under `torch.export` (no data-dependent Python control flow, no `.item()` that is
    branched on); and a module that is still traced with `torch.jit.trace` now takes the other
    branch. `torch.compiler.is_compiling()` is the wider test (True under `torch.compile` and
    `torch.export`) if the branch exists for any graph capture.

    Where a `torch.jit.trace` that stays still runs the code, the fix is held back:
    `is_exporting()` is False under the trace, which would record the other branch.
    """

    id = "TSX502"
    summary = "`torch.jit.is_tracing()` becomes `torch.compiler.is_exporting()` (different meaning: check the branch)"
    applicability = Applicability.UNSAFE
    blocks_export = True

    VALID = [
        Valid("import torch\nif torch.compiler.is_exporting():\n    x = 1\n"),
        Valid("def is_tracing():\n    return False\ny = is_tracing()\n"),
    ]
    INVALID = [
        Invalid(
            "import torch\n\n\ndef f(x):\n    if torch.jit.is_tracing():\n        return x.shape[0]\n    return 0\n",
            "import torch\n\n\ndef f(x):\n    if torch.compiler.is_exporting():\n        return x.shape[0]\n    return 0\n",
            unsafe=True,
        ),
        Invalid(
            "from torch.jit import is_tracing\n\nflag = not is_tracing()\n",
            "import torch\n\nflag = not torch.compiler.is_exporting()\n",
            unsafe=True,
        ),
    ]

    def visit_Call(self, node: cst.Call) -> None:
        if node.args or not self.matches(node.func, *_NAMES):
            return
        self.report(
            node,
            "`torch.jit.is_tracing()` is True only under `torch.jit.trace`; the export-time equivalent is "
            "`torch.compiler.is_exporting()` (True under torch.export, False under jit.trace): check that the "
            "guarded branch is what export should see",
            replacement=cst.parse_expression("torch.compiler.is_exporting()").with_changes(lpar=node.lpar, rpar=node.rpar),
            imports=[Import("torch")],
        )
