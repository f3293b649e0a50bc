import libcst as cst

from ts2export.rule import Applicability, Edit, Invalid, Rule, Valid, argument

from ts2export.rules._catalog_types_util import enclosing, is_script_module_class

_ATTRIBUTE = ("torch.jit.Attribute", "torch.jit._script.Attribute")


class JitAttribute(Rule):
    """
    ## What it does
    Replaces `torch.jit.Attribute(v, T)` with `v`. For a module attribute
    (`self.x = torch.jit.Attribute([], List[int])` in a method) the type moves to a class-level
    annotation: `x: List[int]` in the class body and `self.x = []`.

    ## Why
    `torch.jit.Attribute` declared the TorchScript type of a module attribute. A class-level
    annotation says the same to type checkers and to TorchScript (while the code is still
    scripted), and eager Python and `torch.export` only need the value. (An annotated assignment
    `self.x: List[int] = []` in `__init__` is *not* read by TorchScript: scripting then fails with
    "failed to convert Python type: 'list'", verified in torch 2.13; so the annotation goes on the
    class.)

    ## Example
    ```python
    class Vocab(torch.jit.ScriptModule):
        def __init__(self):
            super().__init__()
            self.names = torch.jit.Attribute({}, Dict[str, int])
    ```
    becomes
    ```python
    class Vocab(torch.jit.ScriptModule):
        names: Dict[str, int]

        def __init__(self):
            super().__init__()
            self.names = {}
    ```

    ## Fix safety
    Safe for attributes of a `torch.jit.ScriptModule` subclass: its `__setattr__` stored `v`
    and recorded `T` as the annotation (verified in torch 2.13), which is what the fix writes.
    Unsafe elsewhere: in eager Python `torch.jit.Attribute(v, T)` is a namedtuple
    `Attribute(value=v, type=T)`, so an `nn.Module` (or a local variable) held the namedtuple
    until `torch.jit.script` unwrapped it; after the fix eager code sees `v`, as the scripted
    module did.

    It keeps TorchScript working in a `ScriptModule` that stays
    (tests/test_keeps_torchscript.py). Left in an `nn.Module` that is exported, it holds the
    export back (an eager module keeps the `Attribute` wrapper).
    """

    id = "TSX202"
    summary = "`torch.jit.Attribute(v, T)` is `v` (with a class annotation `T`) outside TorchScript"
    applicability = Applicability.SAFE
    keeps_torchscript = True
    blocks_export = True

    VALID = [
        Valid("import torch\nfrom typing import List\n\n\nclass M(torch.nn.Module):\n    x: List[int]\n\n"
              "    def __init__(self):\n        super().__init__()\n        self.x = []\n"),
        Valid("import collections\nAttribute = collections.namedtuple('Attribute', 'value type')\na = Attribute(1, int)\n"),
    ]
    INVALID = [
        Invalid(
            "import torch\nfrom typing import List\n\n\nclass M(torch.jit.ScriptModule):\n    __constants__ = ['k']\n\n"
            "    def __init__(self):\n        super().__init__()\n        self.k = 1\n"
            "        self.x = torch.jit.Attribute([], List[int])\n        self.y = torch.jit.Attribute(0.5, float)\n",
            "import torch\nfrom typing import List\n\n\nclass M(torch.jit.ScriptModule):\n    __constants__ = ['k']\n"
            "    x: List[int]\n    y: float\n\n"
            "    def __init__(self):\n        super().__init__()\n        self.k = 1\n"
            "        self.x = []\n        self.y = 0.5\n",
            count=2,
        ),
        Invalid(
            "import torch\nfrom typing import Dict\n\n\nclass M(torch.nn.Module):\n    def __init__(self):\n"
            "        super().__init__()\n        self.names = torch.jit.Attribute({}, Dict[str, int])\n",
            "import torch\nfrom typing import Dict\n\n\nclass M(torch.nn.Module):\n    names: Dict[str, int]\n\n"
            "    def __init__(self):\n        super().__init__()\n        self.names = {}\n",
            unsafe=True,
        ),
        Invalid(
            "from torch.jit import Attribute\n\n\nclass M:\n    a: float\n\n    def __init__(self):\n"
            "        self.a = Attribute(0.5, float)\n        x, y = Attribute(1, int), 2\n",
            "class M:\n    a: float\n\n    def __init__(self):\n        self.a = 0.5\n        x, y = 1, 2\n",
            unsafe=True,
            count=2,
        ),
        # written as an annotation (a graph library's layer does): the type it names
        Invalid(
            "from typing import Optional\n\nimport torch\n\n\nclass M:\n    def __init__(self):\n"
            "        self.cached: torch.jit.Attribute(None, Optional[float])\n",
            "from typing import Optional\n\n\nclass M:\n    def __init__(self):\n"
            "        self.cached: Optional[float]\n",
        ),
    ]

    def visit_Call(self, node: cst.Call) -> None:
        if not self.matches(node.func, *_ATTRIBUTE):
            return
        value, type_ = argument(node, 0, "value"), argument(node, 1, "type")
        if value is None or type_ is None:
            self.report(node, "`torch.jit.Attribute(v, T)` without both arguments: replace it by its value by hand")
            return
        if isinstance(self.parent(node), cst.Annotation):  # `self.x: torch.jit.Attribute(None, Optional[float])`
            self.report(
                node,
                "`torch.jit.Attribute(v, T)` as an annotation names the type `T` for TorchScript; annotate with `T`",
                replacement=type_,
                applicability=Applicability.SAFE,
            )
            return
        cls = enclosing(self, node, cst.ClassDef)
        name = self._self_attribute(node)
        if cls is not None and name is not None:
            safe = is_script_module_class(self, cls)
            where = "" if safe else (
                " (outside a ScriptModule eager code got the namedtuple `Attribute(value, type)` until "
                "`torch.jit.script` unwrapped it; after the fix it gets the value, as the scripted module did)")
            self.report(
                node,
                f"`torch.jit.Attribute(v, T)` only typed `self.{name}` for TorchScript; assign `v` and annotate "
                f"`{name}: T` in the class body{where}",
                edits=[Edit(cls, self._rewrite_class(cls))],
                applicability=Applicability.SAFE if safe else Applicability.UNSAFE,
            )
            return
        self.report(
            node,
            "`torch.jit.Attribute(v, T)` only typed the value for TorchScript; use `v` (in eager Python the call "
            "made a namedtuple `Attribute(value, type)`, so code that read `.value` must change too)",
            replacement=self.substitute(node, value),
            applicability=Applicability.UNSAFE,
        )

    def _self_attribute(self, call: cst.Call) -> str | None:
        """``NAME`` when ``call`` is the whole value of ``self.NAME = call`` in a method."""
        parent = self.parent(call)
        if not (isinstance(parent, cst.Assign) and parent.value is call and len(parent.targets) == 1):
            return None
        target = parent.targets[0].target
        if isinstance(target, cst.Attribute) and isinstance(target.value, cst.Name) and target.value.value == "self":
            return target.attr.value
        return None

    def _rewrite_class(self, cls: cst.ClassDef) -> cst.ClassDef:
        """``cls`` with every ``self.NAME = torch.jit.Attribute(v, T)`` of its own methods turned into
        ``self.NAME = v`` and a class annotation ``NAME: T`` for each (unless one exists)."""
        rule = self
        annotations: dict[str, cst.BaseExpression] = {}

        class _Unwrap(cst.CSTTransformer):
            def visit_ClassDef(self, node: cst.ClassDef) -> bool:
                return node is cls  # nested classes get their own findings

            def leave_Call(self, original: cst.Call, updated: cst.Call) -> cst.BaseExpression:
                try:
                    name = rule._self_attribute(original) if rule.matches(original.func, *_ATTRIBUTE) else None
                except KeyError:  # pragma: no cover - not a node of the checked module
                    name = None
                if name is None:
                    return updated
                value, type_ = argument(updated, 0, "value"), argument(updated, 1, "type")
                if value is None or type_ is None:
                    return updated
                annotations.setdefault(name, type_)
                return value

        new = cls.visit(_Unwrap())
        body = list(new.body.body)
        existing = {
            s.body[0].target.value
            for s in body
            if isinstance(s, cst.SimpleStatementLine) and len(s.body) == 1 and isinstance(s.body[0], cst.AnnAssign)
            and isinstance(s.body[0].target, cst.Name)
        }
        lines = [
            cst.SimpleStatementLine(body=[cst.AnnAssign(target=cst.Name(n), annotation=cst.Annotation(t), value=None)])
            for n, t in annotations.items() if n not in existing
        ]
        if not lines:
            return new
        at = next((i for i, s in enumerate(body) if not isinstance(s, cst.SimpleStatementLine)), len(body))
        if at == 0 and body and not body[0].leading_lines:
            # The annotations open the class; a blank line separates them from the first method.
            body[0] = body[0].with_changes(leading_lines=[cst.EmptyLine(indent=False)])
        body[at:at] = lines
        return new.with_changes(body=new.body.with_changes(body=body))
