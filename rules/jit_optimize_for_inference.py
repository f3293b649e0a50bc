import libcst as cst

from ts2export.rule import Applicability, Invalid, Rule, Valid

_NAMES = ("torch.jit.optimize_for_inference", "torch.jit._freeze.optimize_for_inference",
          "torch.jit.run_frozen_optimizations", "torch.jit._freeze.run_frozen_optimizations")


class JitOptimizeForInference(Rule):
    """
    ## What it does
    Reports `torch.jit.optimize_for_inference(m)` (and `torch.jit.run_frozen_optimizations(m)`).

    ## Why
    `optimize_for_inference` froze a scripted module and rewrote its graph for the CPU (MKL-DNN
    layouts, conv/bn folding, fusions). Its artifacts cannot be converted (TS2EPConverter fails on
    `aten::to_mkldnn`). The equivalent in the new stack is ahead-of-time compilation of an
    exported program:
    - server / C++: `ep = torch.export.export(m.eval(), args)` then
      `torch._inductor.aoti_compile_and_package(ep, package_path="m.pt2")`; load it with
      `torch._inductor.aoti_load_package("m.pt2")` or, in C++,
      `torch::inductor::AOTIModelPackageLoader`;
    - edge / mobile: ExecuTorch,
      `to_edge_transform_and_lower(ep, partitioner=[XnnpackPartitioner()]).to_executorch()`;
    - in-process Python: `torch.compile(m, mode="max-autotune")`.

    ## Example
    ```python
    fast = torch.jit.optimize_for_inference(torch.jit.script(model.eval()))
    ```
    is reported; choose one of the targets above and move the compile step into the build or
    deployment script.

    ## Fix safety
    Report only: which target replaces the optimised module (and where the compile step goes)
    is a deployment decision.

    Report only.
    """

    id = "TSX602"
    summary = "`torch.jit.optimize_for_inference(m)`: compile with AOTInductor or lower to ExecuTorch instead"
    applicability = Applicability.NONE
    unit_site = True

    VALID = [Valid("import torch\nm = torch.compile(torch.nn.Linear(2, 2))\n")]
    INVALID = [
        Invalid("import torch\nfast = torch.jit.optimize_for_inference(torch.jit.script(net))\n", count=1),
        Invalid("from torch.jit import run_frozen_optimizations\nrun_frozen_optimizations(frozen)\n", count=1),
    ]

    def visit_Call(self, node: cst.Call) -> None:
        name = self.matches(node.func, *_NAMES)
        if not name:
            return
        short = name.rsplit(".", 1)[1]
        self.report(
            node,
            f"`torch.jit.{short}(m)` optimised a TorchScript module for CPU inference; export the eval-mode model "
            "(`torch.export.export`) and compile it ahead of time with `torch._inductor.aoti_compile_and_package` "
            "(server/C++) or lower it to ExecuTorch (`to_edge_transform_and_lower(...).to_executorch()`) instead",
        )
