import libcst as cst

from ts2export.rule import Applicability, Invalid, Rule, Valid, argument

from ._runtime_util import expression_statement, remove_small_statement

_NAMES = ("torch.jit.freeze", "torch.jit._freeze.freeze")


class JitFreeze(Rule):
    """
    ## What it does
    Replaces `torch.jit.freeze(m, preserved_attrs=..., optimize_numerics=...)` with `m`; a freeze
    call whose value is not used is removed.

    ## Why
    `torch.jit.freeze` turned a scripted module in eval mode into a frozen copy: parameters and
    attributes inlined as constants, unused attributes and methods dropped (unless named in
    `preserved_attrs`), conv/linear + batch-norm folded. It only accepts a ScriptModule
    ("Freezing expects a ScriptModule as input"), so it fails once the model is eager. The new
    stack does the same work at export time: `torch.export.export` captures parameters and the
    eval-mode behaviour, and AOTInductor (`torch._inductor.aoti_compile_and_package`) or the
    ExecuTorch lowering folds constants and fuses.

    ## Example
    ```python
    model = torch.jit.freeze(torch.jit.script(Net().eval()))
    ```
    becomes (once the script call is migrated too)
    ```python
    model = Net().eval()
    ```

    ## Fix safety
    Unsafe, because `freeze` returned a detached, optimised copy (checked on torch 2.13):
    - the result is now `m` itself: later changes to `m` (`train()`, `load_state_dict`, optimiser
      steps) show through, where the frozen copy kept the old weights;
    - outputs require grad when `m`'s parameters do (the frozen copy's did not): run inference
      under `torch.no_grad()` / `torch.inference_mode()`;
    - folding batch-norm into convolutions changes results by rounding only (2.4e-7 on a small
      conv/bn net);
    - `freeze` raised on a module in training mode; `m` is used as it is: make sure it is in
      `eval()` mode where it was frozen.
    Attributes and methods that freezing dropped are simply available again.

    The frozen module is the call's argument, kept as it is: the call site that made it migrates
    (or not) with its own unit.
    """

    id = "TSX601"
    summary = "`torch.jit.freeze(m)` becomes `m` (export or AOTInductor freeze and fold instead)"
    applicability = Applicability.UNSAFE
    unit_site = True

    VALID = [Valid("import torch\nm = torch.nn.Linear(2, 2).eval()\nfor p in m.parameters():\n    p.requires_grad_(False)\n")]
    INVALID = [
        Invalid(
            "import torch\n\n\ndef load(net):\n    frozen = torch.jit.freeze(torch.jit.script(net.eval()), preserved_attrs=['version'])\n"
            "    return frozen\n",
            "import torch\n\n\ndef load(net):\n    frozen = torch.jit.script(net.eval())\n    return frozen\n",
            unsafe=True,
        ),
        Invalid(
            "from torch.jit import freeze\nimport torch\n\n\ndef load(m):\n    freeze(m)\n    return torch.compile(m)\n",
            "import torch\n\n\ndef load(m):\n    return torch.compile(m)\n",
            unsafe=True,
        ),
        Invalid("import torch\nm = torch.jit.freeze(*mods)\n", count=1),
    ]

    def visit_Call(self, node: cst.Call) -> None:
        if not self.matches(node.func, *_NAMES):
            return
        module = argument(node, 0, "mod")
        if module is None:
            self.report(node, "`torch.jit.freeze(...)` with unpacked arguments: use the module itself instead of the "
                              "frozen copy (freezing happens at export/compile time now)")
            return
        message = ("`torch.jit.freeze(m)` needs a ScriptModule and returned a frozen copy; use the eval-mode module `m` "
                   "itself (torch.export captures and AOTInductor/ExecuTorch fold the weights)")
        stmt = expression_statement(self, node)
        if stmt is not None:
            edits = remove_small_statement(self, stmt)
            if edits:
                self.report(node, message, edits=edits)
                return
        self.report(node, message, replacement=self.substitute(node, module))
