import libcst as cst

from ts2export.rule import Applicability, Edit, Import, Invalid, Rule, Valid

from ts2export.rules._catalog_types_util import (
    SCRIPT_MODULE,
    decorator_target,
    enclosing_class_of_def,
    is_script_module_class,
    local_def,
    methods,
    nn_module_expr,
)


class JitScriptModuleBase(Rule):
    """
    ## What it does
    Rewrites a class derived from `torch.jit.ScriptModule` into an `nn.Module`: the base becomes
    `nn.Module` (or `torch.nn.Module`, whichever the file imports) and every
    `@torch.jit.script_method` of the class is removed. `__constants__` is left in place (it is
    an ordinary class attribute in eager Python).

    ## Why
    A `ScriptModule` subclass compiles its `script_method`s when it is constructed, so the
    object is a TorchScript module: `torch.export` refuses it ("Exporting a ScriptModule is not
    supported"). As an `nn.Module` the same methods run as Python and export traces them.

    ## Example
    ```python
    class Scale(torch.jit.ScriptModule):
        __constants__ = ["k"]

        def __init__(self):
            super().__init__()
            self.k = 2

        @torch.jit.script_method
        def forward(self, x):
            return x * self.k
    ```
    becomes
    ```python
    class Scale(torch.nn.Module):
        __constants__ = ["k"]

        def __init__(self):
            super().__init__()
            self.k = 2

        def forward(self, x):
            return x * self.k
    ```

    ## Fix safety
    Unsafe. The methods now run as Python: TorchScript's conversion of non-tensor arguments to
    their annotated types is gone, and TorchScript-only members of the object (`.code`, `.graph`,
    `.save()`) no longer exist (the call-site rules report `.save`). `ScriptModule.__setattr__`
    unwrapped `torch.jit.Attribute(v, T)` to `v`; an `nn.Module` does not, so apply TSX202 with
    this rule (a normal `apply` does both). A `script_method` in a class that does not itself
    name `torch.jit.ScriptModule` as a base loses the decorator when its bases are classes of the
    same file that this rule migrates; otherwise (a base imported from elsewhere) it is reported
    without a fix.

    The class is an entry point: its conversion is held back while an instance is saved as
    TorchScript (`m.save(p)`, reported by TSX303) or its unit cannot migrate.
    """

    id = "TSX107"
    summary = "`torch.jit.ScriptModule` subclass with `@script_method` becomes an `nn.Module`"
    applicability = Applicability.UNSAFE
    unit_site = True
    blocks_export = True
    triggers = ("ScriptModule", "script_method")

    VALID = [
        Valid("import torch\n\n\nclass Net(torch.nn.Module):\n    def forward(self, x):\n        return x\n"),
        Valid("class ScriptModule:\n    pass\n\n\nclass Net(ScriptModule):\n    pass\n"),
    ]
    INVALID = [
        Invalid(
            "import torch\n\n\nclass Scale(torch.jit.ScriptModule):\n    __constants__ = ['k']\n\n"
            "    def __init__(self):\n        super().__init__()\n        self.k = 2\n\n"
            "    @torch.jit.script_method\n    def forward(self, x):\n        return x * self.k\n",
            "import torch\n\n\nclass Scale(torch.nn.Module):\n    __constants__ = ['k']\n\n"
            "    def __init__(self):\n        super().__init__()\n        self.k = 2\n\n"
            "    def forward(self, x):\n        return x * self.k\n",
            unsafe=True,
            count=2,
        ),
        Invalid(
            "from torch import nn\nfrom torch.jit import ScriptModule, script_method\n\n\nclass Net(ScriptModule):\n"
            "    @script_method\n    def forward(self, x):\n        return x\n",
            "from torch import nn\n\n\nclass Net(nn.Module):\n    def forward(self, x):\n        return x\n",
            unsafe=True,
        ),
        Invalid(
            "import torch\n\n\nclass A(torch.jit.ScriptModule):\n    pass\n\n\nclass B(A):\n    @torch.jit.script_method\n"
            "    def forward(self, x):\n        return x\n",
            "import torch\n\n\nclass A(torch.nn.Module):\n    pass\n\n\nclass B(A):\n"
            "    def forward(self, x):\n        return x\n",
            unsafe=True,
            count=2,
        ),
        Invalid(
            "import torch\nfrom base import Base\n\n\nclass Net(Base):\n    @torch.jit.script_method\n"
            "    def forward(self, x):\n        return x\n",
            None,
            count=1,
        ),
    ]

    def __init__(self, context) -> None:
        super().__init__(context)
        self._module: cst.Module | None = None

    def visit_Module(self, node: cst.Module) -> None:
        self._module = node

    def _class_fix(self, cls: cst.ClassDef) -> tuple[list[Edit], list[Import]]:
        expr, needed = nn_module_expr(self._module)
        edits = [Edit(b.value, expr) for b in cls.bases if self.matches(b.value, *SCRIPT_MODULE)]
        for method in methods(cls):
            for dec in method.decorators:
                if self.matches(decorator_target(dec), "torch.jit.script_method"):
                    edits.append(Edit(dec, cst.RemovalSentinel.REMOVE))
        return edits, [Import(needed)] if needed else []

    def visit_ClassDef(self, node: cst.ClassDef) -> None:
        if not is_script_module_class(self, node):
            return
        base = next(b for b in node.bases if self.matches(b.value, *SCRIPT_MODULE))
        edits, imports = self._class_fix(node)
        self.report(
            base.value,
            f"`{node.name.value}` derives from `torch.jit.ScriptModule`, which torch.export refuses; derive from "
            "`nn.Module` and drop its `@torch.jit.script_method` decorators",
            edits=edits,
            imports=imports,
        )

    def visit_Decorator(self, node: cst.Decorator) -> None:
        if not self.matches(decorator_target(node), "torch.jit.script_method"):
            return
        func = self.parent(node)
        cls = enclosing_class_of_def(self, func) if isinstance(func, cst.FunctionDef) else None
        if is_script_module_class(self, cls):
            edits, imports = self._class_fix(cls)
            self.report(
                node,
                f"`@torch.jit.script_method` compiles `{func.name.value}` for TorchScript; it goes with the "
                f"`torch.jit.ScriptModule` base of `{cls.name.value}`",
                edits=edits,
                imports=imports,
            )
            return
        if cls is not None and self._bases_known(cls, set()):
            self.report(
                node,
                f"`@torch.jit.script_method` in `{cls.name.value}`, whose bases in this file become `nn.Module`s "
                "(TSX107); remove it with them",
                replacement=cst.RemovalSentinel.REMOVE,
            )
            return
        self.report(
            node,
            "`@torch.jit.script_method` only works in a `torch.jit.ScriptModule` subclass; once the class (and its "
            "bases) derive from `nn.Module`, remove the decorator",
            applicability=Applicability.NONE,
        )

    def _bases_known(self, cls: cst.ClassDef, seen: set) -> bool:
        """Whether every base of ``cls`` is a torch class or a class of this file whose bases are known,
        so that the whole hierarchy is migrated by this rule."""
        if id(cls) in seen or not cls.bases:
            return False
        seen.add(id(cls))
        for base in cls.bases:
            if self.matches(base.value, *SCRIPT_MODULE) or self.matches_prefix(base.value, "torch.nn"):
                continue
            if not isinstance(base.value, cst.Name):
                return False
            definition = local_def(self, base.value)
            if not isinstance(definition, cst.ClassDef) or not self._bases_known(definition, seen):
                return False
        return True
