import libcst as cst

from ts2export.rule import Applicability, Invalid, Rule, Valid, argument
from ts2export.rule.callsites import OPTIMIZE, code, origin, plan_for, plan_uses


class OptimizeForMobile(Rule):
    """
    ## What it does
    Replaces `optimize_for_mobile(m)` by `m` when `m` is (in this file) a module that ts2export
    exports and lowers to ExecuTorch (TSX301/TSX302 with TSX305): XNNPACK delegation in
    `to_edge_transform_and_lower` does the work that `optimize_for_mobile` did (operator fusion,
    prepacked weights). Where the optimized module is also called, the calls go through `.module()`.

    ## Why
    `torch.utils.mobile_optimizer.optimize_for_mobile` only accepts TorchScript modules (and fails
    on CPU wheels built without XNNPACK); an `ExportedProgram` is optimized when lowered.

    ## Example
    ```python
    opt = optimize_for_mobile(traced)
    opt._save_for_lite_interpreter("m.ptl")
    ```
    becomes
    ```python
    opt = traced
    pathlib.Path("m.pte").write_bytes(to_edge_transform_and_lower(opt, partitioner=[XnnpackPartitioner()]).to_executorch().buffer)
    ```

    ## Fix safety
    As safe as the export of `m`. Options of `optimize_for_mobile` (`optimization_blocklist`,
    `preserved_methods`, `backend="vulkan"`/`"metal"`) are dropped; a GPU backend is reported in
    the message (ExecuTorch has Vulkan/MPS/CoreML partitioners to choose by hand).

    A call site: it migrates with its unit or is held back with it.
    """

    id = "TSX306"
    summary = "`optimize_for_mobile(m)` is done by ExecuTorch lowering"
    applicability = Applicability.UNSAFE
    unit_site = True
    triggers = ("mobile_optimizer",)

    VALID = [Valid("def optimize_for_mobile(m):\n    return m\nx = optimize_for_mobile(1)\n")]
    INVALID = [
        Invalid(
            "import torch\nfrom torch.utils.mobile_optimizer import optimize_for_mobile\n"
            "ep = torch.export.export(m, (x,))\nopt = optimize_for_mobile(ep)\ntorch.export.save(opt, 'p.pt2')\n",
            "import torch\nep = torch.export.export(m, (x,))\nopt = ep\ntorch.export.save(opt, 'p.pt2')\n",
        ),
        Invalid("from torch.utils.mobile_optimizer import optimize_for_mobile\n\n\ndef f(m):\n    return optimize_for_mobile(m)\n", None, count=1),
    ]

    def visit_Call(self, node: cst.Call) -> None:
        if not self.matches(node.func, OPTIMIZE):
            return
        module = argument(node, 0, "script_module")
        source = origin(self, module) if module is not None else None
        if source is None:
            self.report(node, (
                "`optimize_for_mobile(...)` of a module whose origin is not visible in this file: export the module and "
                "lower it with `to_edge_transform_and_lower(ep, partitioner=[XnnpackPartitioner()])`, which does these optimizations"))
            return
        uses = plan_uses(self, node, lambda ep: code(module), "optimized module")
        if uses.problem:
            self.report(node, f"`optimize_for_mobile(...)` not rewritten: {uses.problem}")
            return
        plan = plan_for(self, source)
        if plan.problem:
            self.report(node, f"`optimize_for_mobile(...)` not rewritten: its module stays TorchScript (see the finding at line {self.position(source).start.line})")
            return
        backend = argument(node, None, "backend")
        extra = f"; backend {code(backend)}: pick ExecuTorch's partitioner for it by hand" if backend is not None else ""
        self.report(
            node,
            f"`optimize_for_mobile(...)` is TorchScript-only: ExecuTorch's XNNPACK lowering does these optimizations; use `{self.shown(module)}`{extra}",
            edits=uses.edits,
            applicability=plan.applicability,
        )
