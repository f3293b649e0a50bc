import libcst as cst

from ts2export.rule import Applicability, Edit, Invalid, Rule, Valid, argument

from ts2export.rules._catalog_types_util import enclosing, is_script_module_class


class JitAttribute(Rule):
    """
    ## What it does
    Replaces `torch.jit.Attribute(v, T)` with `v`, keeping the type as an annotation:
    `self.x = torch.jit.Attribute([], List[int])` becomes `self.x: List[int] = []`.

    ## Why
    `torch.jit.Attribute` declared the TorchScript type of a module attribute. An annotated
    assignment says the same for type checkers (and for TorchScript, while it is still used), and
    eager Python and `torch.export` only need the value.

    ## Example
    ```python
    self.names = torch.jit.Attribute({}, Dict[str, int])
    ```
    becomes
    ```python
    self.names: Dict[str, int] = {}
    ```

    ## Fix safety
    Safe in a `torch.jit.ScriptModule` subclass: its `__setattr__` stored `v` (verified in torch
    2.13). Unsafe elsewhere: in eager Python `torch.jit.Attribute(v, T)` is a namedtuple
    `Attribute(value=v, type=T)`, so an `nn.Module` held the namedtuple until `torch.jit.script`
    unwrapped it; after the fix eager code sees `v`, as the scripted module did.
    """

    id = "TSX202"
    summary = "`torch.jit.Attribute(v, T)` is `v` (annotated with `T`) outside TorchScript"
    applicability = Applicability.SAFE

    VALID = [
        Valid("import torch\nfrom typing import List\n\n\nclass M(torch.nn.Module):\n    def __init__(self):\n"
              "        super().__init__()\n        self.x: List[int] = []\n"),
        Valid("import collections\nAttribute = collections.namedtuple('Attribute', 'value type')\na = Attribute(1, int)\n"),
    ]
    INVALID = [
        Invalid(
            "import torch\nfrom typing import List\n\n\nclass M(torch.jit.ScriptModule):\n    def __init__(self):\n"
            "        super().__init__()\n        self.x = torch.jit.Attribute([], List[int])\n",
            "import torch\nfrom typing import List\n\n\nclass M(torch.jit.ScriptModule):\n    def __init__(self):\n"
            "        super().__init__()\n        self.x: List[int] = []\n",
        ),
        Invalid(
            "import torch\nfrom typing import Dict\n\n\nclass M(torch.nn.Module):\n    def __init__(self):\n"
            "        super().__init__()\n        self.names = torch.jit.Attribute({}, Dict[str, int])\n",
            "import torch\nfrom typing import Dict\n\n\nclass M(torch.nn.Module):\n    def __init__(self):\n"
            "        super().__init__()\n        self.names: Dict[str, int] = {}\n",
            unsafe=True,
        ),
        Invalid(
            "from torch.jit import Attribute\n\n\nclass M:\n    def __init__(self):\n"
            "        self.a = self.b = Attribute(0.5, float)\n",
            "\n\nclass M:\n    def __init__(self):\n        self.a = self.b = 0.5\n",
            unsafe=True,
        ),
    ]

    def visit_Call(self, node: cst.Call) -> None:
        if not self.matches(node.func, "torch.jit.Attribute"):
            return
        value = argument(node, 0, "value")
        type_ = argument(node, 1, "type")
        if value is None or type_ is None:
            self.report(node, "`torch.jit.Attribute(v, T)` without both arguments: replace it by its value by hand")
            return
        cls = enclosing(self, node, cst.ClassDef)
        if is_script_module_class(self, cls):
            applicability, where = Applicability.SAFE, ""
        else:
            applicability = Applicability.UNSAFE
            where = (" (outside a ScriptModule eager code got the namedtuple `Attribute(value, type)` until "
                     "`torch.jit.script` unwrapped it; after the fix it gets the value, as the scripted module did)")
        parent = self.parent(node)
        if (
            isinstance(parent, cst.Assign)
            and len(parent.targets) == 1
            and parent.value is node
            and isinstance(parent.targets[0].target, (cst.Name, cst.Attribute, cst.Subscript))
        ):
            self.report(
                node,
                f"`torch.jit.Attribute(v, T)` only typed the attribute for TorchScript; write `target: T = v`{where}",
                edits=[_annotated(self, parent, value, type_)],
                applicability=applicability,
            )
            return
        self.report(
            node,
            f"`torch.jit.Attribute(v, T)` only typed the value for TorchScript; use `v`{where}",
            replacement=self.substitute(node, value),
            applicability=applicability,
        )


def _annotated(rule: Rule, assign: cst.Assign, value: cst.BaseExpression, type_: cst.BaseExpression):
    return Edit(
        assign,
        cst.AnnAssign(
            target=assign.targets[0].target,
            annotation=cst.Annotation(annotation=type_),
            value=value,
            semicolon=assign.semicolon,
        ),
    )
