import libcst as cst

from ts2export.rule import Applicability, Invalid, Rule, Valid

from ts2export.rules._catalog_types_util import decorator_target, enclosing_class_of_def, self_attribute_uses


class JitExportDecorator(Rule):
    """
    ## What it does
    Removes `@torch.jit.export` from a method that the class itself calls (`self.name(...)`), from
    `forward`, and from free functions. An exported method that nothing in its class calls is reported instead:
    it is an extra entry point of the scripted artifact.

    ## Why
    `@torch.jit.export` told `torch.jit.script` to compile a method besides `forward`. A method
    that `forward` (or another method) calls is compiled anyway, and in eager Python and under
    `torch.export` the decorator does nothing. A method that nothing calls was exported so that
    the loaded artifact could be called as `loaded.encode(...)`; `torch.export` captures one
    method per program, so such a method must become its own exported program (the call-site
    rules for artifacts deal with that), not silently lose its decorator.

    ## Example
    ```python
    class Net(nn.Module):
        @torch.jit.export
        def norm(self, x):
            return x / x.norm()

        def forward(self, x):
            return self.norm(x)
    ```
    becomes
    ```python
    class Net(nn.Module):
        def norm(self, x):
            return x / x.norm()

        def forward(self, x):
            return self.norm(x)
    ```

    ## Fix safety
    Safe: in eager mode `torch.jit.export` returns the function unchanged (it only sets an
    attribute the TorchScript compiler reads). Entry points (methods nothing in the class calls)
    are reported without a fix.

    It keeps TorchScript working: a method that `forward` calls is compiled anyway, and stays
    callable on the scripted module (tests/test_keeps_torchscript.py), so the fix is written
    even where the class is still scripted.
    """

    id = "TSX102"
    summary = "`@torch.jit.export` on a method the model calls itself means nothing outside TorchScript"
    applicability = Applicability.SAFE
    keeps_torchscript = True
    keeps_tracing = True

    VALID = [
        Valid("import torch\n\n\nclass Net(torch.nn.Module):\n    def forward(self, x):\n        return x\n"),
        Valid("def export(f):\n    return f\n\n\n@export\ndef g():\n    pass\n"),
    ]
    INVALID = [
        Invalid(
            "import torch\n\n\nclass Net(torch.nn.Module):\n    @torch.jit.export\n    def norm(self, x):\n"
            "        return x / x.norm()\n\n    def forward(self, x):\n        return self.norm(x)\n",
            "import torch\n\n\nclass Net(torch.nn.Module):\n    def norm(self, x):\n"
            "        return x / x.norm()\n\n    def forward(self, x):\n        return self.norm(x)\n",
        ),
        Invalid(
            "import torch\n\n\nclass Net(torch.nn.Module):\n    @torch.jit.export\n    def forward(self, x):\n"
            "        return x\n",
            "import torch\n\n\nclass Net(torch.nn.Module):\n    def forward(self, x):\n        return x\n",
        ),
        Invalid(
            "from torch.jit import export\n\n\n@export\ndef helper(x):\n    return x\n",
            "def helper(x):\n    return x\n",
        ),
        Invalid(
            "import torch\n\n\nclass Net(torch.nn.Module):\n    @torch.jit.export\n    def encode(self, x):\n"
            "        return x * 2\n\n    def forward(self, x):\n        return x\n",
            None,
            count=1,
        ),
    ]

    def visit_Decorator(self, node: cst.Decorator) -> None:
        if not self.matches(decorator_target(node), "torch.jit.export"):
            return
        func = self.parent(node)
        if not isinstance(func, cst.FunctionDef):
            return
        cls = enclosing_class_of_def(self, func)
        if cls is None:
            self.report(
                node,
                f"`@torch.jit.export` on the function `{func.name.value}` only steered the TorchScript compiler; remove it",
                replacement=cst.RemovalSentinel.REMOVE,
            )
            return
        name = func.name.value
        if name == "forward" or self_attribute_uses(cls, name, skip=func):
            self.report(
                node,
                f"`@torch.jit.export` on `{cls.name.value}.{name}`, which "
                + ("is compiled anyway" if name == "forward" else "the class itself calls")
                + ", "
                "only steered the TorchScript compiler; remove it",
                replacement=cst.RemovalSentinel.REMOVE,
            )
            return
        self.report(
            node,
            f"`@torch.jit.export` makes `{cls.name.value}.{name}` an extra entry point of the scripted artifact "
            "(nothing in the class calls it); torch.export captures one method per program: export "
            f"`{name}` as a separate program (e.g. a wrapper module whose forward calls it), then remove the decorator",
            applicability=Applicability.NONE,
        )
