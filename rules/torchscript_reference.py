import libcst as cst

from ts2export.rule import TORCHSCRIPT_PREFIXES, Applicability, Invalid, Rule, Valid

# Attribute names that exist only on TorchScript objects.
_SCRIPT_ONLY_ATTRIBUTES = {"_save_for_lite_interpreter", "_save_to_buffer_for_lite_interpreter"}


class TorchScriptReference(Rule):
    """
    ## What it does
    Reports every reference to TorchScript (`torch.jit.*`, `torch.classes`, `torch._C._jit_*`,
    `torch.utils.mobile_optimizer`, `._save_for_lite_interpreter`) that no other rule handles.

    ## Why
    A migration must never leave TorchScript behind silently. This catch-all rule makes sure
    `check` fails while any TorchScript construct remains, even one ts2export has no rewrite for.
    Where a more specific rule reports the same place, this rule stays quiet.

    ## Example
    ```python
    torch.jit.set_fusion_strategy([("STATIC", 2)])
    ```
    is reported until a specific rule rewrites it or a person removes it (or suppresses the finding
    with `# ts2export: ignore[TSX001]`).

    ## Fix safety
    Report only: there is no general rewrite.

    Report only. Left in code that an entry point exports, it holds that entry point back
    (torch.export may stop there).
    """

    id = "TSX001"
    summary = "TorchScript reference that no other rule handles"
    applicability = Applicability.NONE
    blocks_export = True
    fallback = True
    triggers = ("jit", "torch.classes", "mobile_optimizer", "lite_interpreter", "ScriptModule")

    VALID = [
        Valid("import torch\ny = torch.relu(torch.ones(2))\n"),
        Valid("import torch.jit\n"),  # an import alone is not a construct
        Valid("jit = object()\nx = jit.script\n"),
        Valid("# torch.jit.script(model) in a comment\ns = 'torch.jit.trace'\n"),
    ]
    INVALID = [
        Invalid("import torch\ntorch.jit.set_fusion_strategy([('STATIC', 2)])\n", count=1),
        Invalid("import torch as th\nm = th.jit.CompilationUnit('def f(x): return x')\n", count=1),
        Invalid("from torch.jit import trace as tr\nm = tr(f, x)\n", count=1),
        Invalid("from torch import jit\nm = jit.load('m.pt')\n", count=1),
        Invalid("import torch\nq = torch.classes.my_ns.Queue()\n", count=1),
        Invalid("def deploy(m):\n    m._save_for_lite_interpreter('m.ptl')\n", count=1),
    ]

    def _report(self, node: cst.CSTNode, name: str) -> None:
        self.report(node, f"`{name}` is TorchScript and has no automatic rewrite; migrate it by hand (see `ts2export explain {self.id}`)")

    def _outermost(self, node: cst.BaseExpression) -> bool:
        parent = self.parent(node)
        return not (isinstance(parent, cst.Attribute) and parent.value is node)

    def visit_Attribute(self, node: cst.Attribute) -> None:
        if node.attr.value in _SCRIPT_ONLY_ATTRIBUTES:
            self._report(node, "." + node.attr.value)
            return
        self._check_name(node)

    def visit_Name(self, node: cst.Name) -> None:
        self._check_name(node)

    def _check_name(self, node: cst.BaseExpression) -> None:
        name = self.matches_prefix(node, *TORCHSCRIPT_PREFIXES)  # first: it rarely needs scope analysis
        if not name:
            return
        parent = self.parent(node)
        if isinstance(node, cst.Name) and isinstance(parent, cst.Attribute) and parent.attr is node:
            return
        if self._outermost(node) and not self.in_import(node):
            self._report(node, name)
