import libcst as cst

from ts2export.rule import Applicability, Invalid, Rule, Valid

#: Contexts and decorators under which an in-place write records no autograd history.
_GRAD_FREE = ("torch.no_grad", "torch.inference_mode", "torch.autograd.no_grad", "torch.autograd.grad_mode.no_grad",
              "torch.autograd.grad_mode.inference_mode")
_SET_GRAD = ("torch.set_grad_enabled", "torch.autograd.set_grad_enabled", "torch.autograd.grad_mode.set_grad_enabled")


def _parameter_like(node: cst.BaseExpression) -> bool:
    """``conv.weight``, ``self.fc.bias``, ``layer.in_proj_weight``: an attribute named like a parameter."""
    if not isinstance(node, cst.Attribute):
        return False
    name = node.attr.value
    return name in ("weight", "bias") or name.endswith(("_weight", "_bias"))


class InplaceParameterWrite(Rule):
    """
    ## What it does
    Finds values copied into a module's parameters in place while grad mode is on
    (`fused.weight.copy_(w)`), and copies a detached value instead (`fused.weight.copy_(w.detach())`).

    ## Why
    Conv and batch-norm fusing helpers, as detection and segmentation repositories have, build the
    fused layer with `requires_grad_(False)` and write its weight with `copy_` from tensors computed
    from the original layers' parameters. With grad mode on, that copy records autograd history: the
    parameter stops being a leaf (`weight.grad_fn` is `CopyBackwards`). TorchScript does not mind,
    but a program exported from such a module cannot be turned back into a module:
    `ExportedProgram.module()` raises `ValueError: Cannot assign non-leaf Tensor to parameter
    'weight'` (checked on torch 2.13; `torch.no_grad()` around the export does not help, because the
    parameter was made before). The migration of the trace or script of the fused model
    (TSX301, TSX302) calls `.module()`, so it needs the parameters to be leaves.

    ## Example
    ```python
    fused.weight.copy_(torch.mm(w_bn, w_conv).view(fused.weight.shape))
    ```
    becomes
    ```python
    fused.weight.copy_(torch.mm(w_bn, w_conv).view(fused.weight.shape).detach())
    ```

    ## Fix safety
    Unsafe: the parameter holds the same values, but gradients no longer flow from it back into the
    tensors it was copied from (the original layers' parameters). Inference, export and the fused
    model's own training are unchanged; code that backpropagates through the fused copy into the
    unfused layers (rare: the fused model replaces them) would change. Writes under
    `torch.no_grad()`, `torch.inference_mode()`, `torch.set_grad_enabled(False)` or in a function
    decorated with one of them are left alone, as are writes through `.data`.
    """

    id = "TSX310"
    summary = "A parameter written with `copy_` while grad mode is on stops being a leaf: copy a detached value"
    applicability = Applicability.UNSAFE
    triggers = ("copy_",)
    also_requires = (("weight", "bias"),)
    makes_parameters_leaves = True

    VALID = [
        Valid("import torch\n\n\ndef fuse(fused, w):\n    with torch.no_grad():\n        fused.weight.copy_(w)\n"),
        Valid("import torch\n\n\n@torch.no_grad()\ndef fuse(fused, w):\n    fused.weight.copy_(w)\n"),
        Valid("import torch\n\n\ndef fuse(fused, w):\n    fused.weight.data.copy_(w)\n    buf.copy_(w)\n"),
        Valid("import torch\n\n\ndef fuse(fused, w):\n    with torch.set_grad_enabled(False):\n        fused.bias.copy_(w)\n"),
    ]
    INVALID = [
        Invalid(
            "import torch\n\n\ndef fuse(fused, w_bn, w_conv):\n    fused.weight.copy_(torch.mm(w_bn, w_conv).view(fused.weight.shape))\n",
            "import torch\n\n\ndef fuse(fused, w_bn, w_conv):\n"
            "    fused.weight.copy_(torch.mm(w_bn, w_conv).view(fused.weight.shape).detach())\n",
            unsafe=True,
        ),
        Invalid(
            "def fuse(fused, b_bn, b_conv):\n    fused.bias.copy_(b_conv + b_bn)\n",
            "def fuse(fused, b_bn, b_conv):\n    fused.bias.copy_((b_conv + b_bn).detach())\n",
            unsafe=True,
        ),
    ]

    def visit_Call(self, node: cst.Call) -> None:
        func = node.func
        if not (isinstance(func, cst.Attribute) and func.attr.value == "copy_" and _parameter_like(func.value)):
            return
        if not node.args or node.args[0].keyword is not None or node.args[0].star or self._grad_free(node):
            return
        value = node.args[0].value
        if self._detached(value):
            return
        atomic = isinstance(value, (cst.Name, cst.Attribute, cst.Call, cst.Subscript)) or value.lpar
        inner = value if atomic else value.with_changes(lpar=[cst.LeftParen()], rpar=[cst.RightParen()])
        detached = cst.Call(func=cst.Attribute(value=inner, attr=cst.Name("detach")))
        self.report(
            node,
            f"`{self.shown(func.value)}.copy_(...)` runs with grad mode on: when the copied value requires grad, the "
            "parameter stops being a leaf, and the exported program's `.module()` raises `ValueError: Cannot assign "
            "non-leaf Tensor to parameter` (torch 2.13); copy a detached value (or write it under `torch.no_grad()`)",
            replacement=node.with_changes(args=[node.args[0].with_changes(value=detached), *node.args[1:]]),
        )

    @staticmethod
    def _detached(value: cst.BaseExpression) -> bool:
        return (isinstance(value, cst.Call) and isinstance(value.func, cst.Attribute)
                and value.func.attr.value == "detach" and not value.args)

    def _grad_free(self, node: cst.CSTNode) -> bool:
        current = self.parent(node)
        while current is not None:
            if isinstance(current, cst.With) and any(self._grad_free_call(item.item) for item in current.items):
                return True
            if isinstance(current, cst.FunctionDef):
                if any(self._grad_free_call(d.decorator) for d in current.decorators):
                    return True
            current = self.parent(current)
        return False

    def _grad_free_call(self, expr: cst.BaseExpression) -> bool:
        target = expr.func if isinstance(expr, cst.Call) else expr
        if self.matches(target, *_GRAD_FREE):
            return True
        if isinstance(expr, cst.Call) and self.matches(target, *_SET_GRAD) and expr.args:
            first = expr.args[0].value
            return isinstance(first, cst.Name) and first.value == "False"
        return False
