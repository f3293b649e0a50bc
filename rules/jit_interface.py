import libcst as cst
from libcst.metadata import ScopeProvider

from ts2export.rule import Applicability, Edit, Import, Invalid, Rule, Valid

from ts2export.rules._catalog_types_util import decorator_target


class JitInterface(Rule):
    """
    ## What it does
    Removes TorchScript interfaces (`@torch.jit.interface` classes). Where the interface only
    typed submodules picked from a `ModuleList`/`ModuleDict` by index
    (`down: ModuleInterface = self.mods[i]`), the class and those annotations are deleted.
    Where it is used as a type elsewhere (parameters, return types), it becomes a
    `typing.Protocol`. An interface that other classes derive from is reported without a fix.

    ## Why
    TorchScript cannot call a submodule picked by a runtime index unless the variable is typed
    with an interface. Eager Python and `torch.export` index the list and call the module as it
    is, so the interface is only a type declaration; `typing.Protocol` is Python's own way to
    declare one, and the decorator keeps `torch.jit` alive.

    ## Example
    ```python
    @torch.jit.interface
    class ModuleInterface(nn.Module):
        def forward(self, input: Tensor) -> Tensor:
            pass

    class Net(nn.Module):
        def forward(self, x, i: int):
            down: ModuleInterface = self.mods[i]
            return down.forward(x)
    ```
    becomes
    ```python
    class Net(nn.Module):
        def forward(self, x, i: int):
            down = self.mods[i]
            return down.forward(x)
    ```

    ## Fix safety
    Unsafe. Eager code keeps working either way (the interface was an ordinary, never
    instantiated class), but the class's name disappears or changes kind: another file that
    imports the interface breaks, and `isinstance(obj, Interface)` raises `TypeError` on a
    Protocol (it is not `@runtime_checkable`).

    Where an entry point that stays TorchScript still compiles a class typed with the interface,
    the fix is held back: TorchScript types the attribute with it. A trace is not affected.
    """

    id = "TSX108"
    summary = "`@torch.jit.interface` becomes a `typing.Protocol`, or goes where it only typed indexed submodules"
    applicability = Applicability.UNSAFE
    keeps_tracing = True

    VALID = [
        Valid("from typing import Protocol\n\n\nclass Runner(Protocol):\n    def run(self) -> int:\n        ...\n"),
    ]
    INVALID = [
        Invalid(
            "import torch\nfrom torch import Tensor, nn\n\n\n@torch.jit.interface\nclass ModuleInterface(nn.Module):\n"
            "    def forward(self, input: Tensor) -> Tensor:\n        pass\n\n\n"
            "class Net(nn.Module):\n    def forward(self, x, i: int):\n        down: ModuleInterface = self.mods[i]\n"
            "        return down.forward(x)\n",
            "from torch import nn\n\n\n"
            "class Net(nn.Module):\n    def forward(self, x, i: int):\n        down = self.mods[i]\n"
            "        return down.forward(x)\n",
            unsafe=True,
        ),
        Invalid(
            "import torch\nfrom torch import Tensor\n\n\n@torch.jit.interface\nclass Runner:\n"
            "    def run(self, x: Tensor) -> Tensor:\n        pass\n\n\n"
            "def call(r: Runner, x: Tensor) -> Tensor:\n    return r.run(x)\n",
            "from torch import Tensor\nfrom typing import Protocol\n\n\nclass Runner(Protocol):\n"
            "    def run(self, x: Tensor) -> Tensor:\n        pass\n\n\n"
            "def call(r: Runner, x: Tensor) -> Tensor:\n    return r.run(x)\n",
            unsafe=True,
        ),
        Invalid(
            "import torch\nfrom torch import nn\n\n\n@torch.jit.interface\nclass Iface(nn.Module):\n"
            "    def forward(self, x):\n        pass\n\n\nclass Impl(Iface):\n    def forward(self, x):\n        return x\n",
            None,
            count=1,
        ),
    ]

    def visit_Decorator(self, node: cst.Decorator) -> None:
        if not self.matches(decorator_target(node), "torch.jit.interface"):
            return
        cls = self.parent(node)
        if not isinstance(cls, cst.ClassDef):
            return
        name = cls.name.value
        references = self._references(cls)
        if references is None:
            self.report(node, f"`@torch.jit.interface` class `{name}`: remove the decorator by hand "
                              "(it only typed modules for TorchScript)", applicability=Applicability.NONE)
            return
        annassigns, other_annotations, elsewhere = [], 0, []
        for ref in references:
            owner = self._annotation_owner(ref)
            if isinstance(owner, cst.AnnAssign) and owner.value is not None:
                annassigns.append(owner)
            elif owner is not None:
                other_annotations += 1
            else:
                elsewhere.append(ref)
        if elsewhere:
            self.report(
                node,
                f"`@torch.jit.interface` class `{name}` is used as more than a type (e.g. as a base class); "
                "remove the decorator and make it an ordinary base class or a `typing.Protocol` by hand",
                applicability=Applicability.NONE,
            )
            return
        if not other_annotations:
            edits = [Edit(cls, cst.RemovalSentinel.REMOVE)]
            edits += [
                Edit(a, cst.Assign(targets=[cst.AssignTarget(target=a.target)], value=a.value)) for a in annassigns
            ]
            self.report(
                node,
                f"`@torch.jit.interface` class `{name}` only typed submodules picked by index for TorchScript; "
                "delete it and the annotations that name it (eager Python and torch.export call the module as it is)",
                edits=edits,
            )
            return
        bases = [b for b in cls.bases if not self.matches_prefix(b.value, "torch.nn")]
        bases = [b.with_changes(comma=cst.MaybeSentinel.DEFAULT) for b in bases]
        bases.append(cst.Arg(value=cst.Name("Protocol")))
        new = cls.with_changes(
            decorators=[d for d in cls.decorators if d is not node],
            bases=bases,
            lpar=cst.LeftParen(),
            rpar=cst.RightParen(),
        )
        self.report(
            node,
            f"`@torch.jit.interface` class `{name}` declared a type for TorchScript; make it a `typing.Protocol`",
            edits=[Edit(cls, new)],
            imports=[Import("typing", "Protocol")],
        )

    def _references(self, cls: cst.ClassDef):
        scope = self.get_metadata(ScopeProvider, cls, None)
        if scope is None:
            return None
        out = []
        for a in scope[cls.name.value]:
            if getattr(a, "node", None) is not cls:
                return None  # rebound: leave it to a person
            out.extend(r.node for r in a.references)
        return self.in_source_order(out)

    def _annotation_owner(self, ref: cst.CSTNode):
        """The statement/parameter whose annotation is exactly ``ref``, else None."""
        parent = self.parent(ref)
        if not isinstance(parent, cst.Annotation) or parent.annotation is not ref:
            return None
        return self.parent(parent)
