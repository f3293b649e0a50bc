import libcst as cst

from ts2export.rule import Applicability, Invalid, Rule, Valid


class JitExportOpnames(Rule):
    """
    ## What it does
    Reports `torch.jit.export_opnames(m)`.

    ## Why
    `export_opnames` listed the root operators of a scripted module, to build a selective (small)
    PyTorch Mobile runtime that contains only those operators. ExecuTorch does the same from the
    program itself: build the `.pte`, then generate the operator list with
    `python -m executorch.codegen.tools.gen_oplist --model_file_path=model.pte
    --output_path=selected_operators.yaml` (or the `executorch_generated_lib` /
    `gen_selected_ops` build rules) and build the runtime with it.

    ## Example
    ```python
    ops = torch.jit.export_opnames(scripted)
    yaml.dump(ops, open("ops.yaml", "w"))
    ```
    is reported: produce the list from the `.pte` instead.

    ## Fix safety
    Report only: the list feeds a build system, which changes with the runtime.

    Report only.
    """

    id = "TSX704"
    summary = "`torch.jit.export_opnames(m)`: generate the ExecuTorch operator list from the .pte instead"
    applicability = Applicability.NONE

    VALID = [Valid("import torch\nnames = [n.target for n in gm.graph.nodes]\n")]
    INVALID = [Invalid("import torch\nops = torch.jit.export_opnames(torch.jit.script(m))\n", count=1)]

    def visit_Call(self, node: cst.Call) -> None:
        if self.matches(node.func, "torch.jit.export_opnames", "torch.jit._script.export_opnames"):
            self.report(
                node,
                "`torch.jit.export_opnames(m)` listed operators for a selective PyTorch Mobile build; for ExecuTorch "
                "generate the list from the .pte (`python -m executorch.codegen.tools.gen_oplist "
                "--model_file_path=model.pte --output_path=selected_operators.yaml`)",
            )
