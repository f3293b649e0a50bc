import libcst as cst

from ts2export.rule import Applicability, Invalid, Rule, Valid

from ._control_flow import module_info
from ._module_walk import is_module_class, screened_base_names, torch_names, traced_methods

_IGNORES = ("torch.jit.ignore", "torch.jit.unused", "torch.jit._script.ignore", "torch._jit_internal.ignore",
            "torch._jit_internal.unused")
# Tensor methods that leave the graph for Python values or other libraries.
_PYTHON_METHODS = {"numpy", "item", "tolist", "__array__"}
# Functions whose call is Python I/O, or that read a tensor into a Python number.
_PYTHON_FUNCTIONS = {"builtins.print", "builtins.open", "builtins.input", "builtins.float", "builtins.int",
                     "builtins.bool"}
_PYTHON_MODULES = ("numpy", "scipy", "pandas", "logging", "time", "random", "json", "pickle", "os", "sys", "PIL",
                   "cv2", "sklearn")


class PythonOnlyIgnoredMethod(Rule):
    """
    ## What it does
    Reports Python-only code (numpy and other libraries, `.numpy()`, `.item()`, `.tolist()`,
    `float(t)`, `print`, file I/O, logging) in a method of an `nn.Module` marked
    `@torch.jit.ignore` or `@torch.jit.unused` that `forward` (or another method TorchScript
    compiled) calls.

    ## Why
    TorchScript never compiled such a method: an ignored one was called back in Python, an unused one
    replaced by an exception. `torch.export` has no such escape: it traces into the method and stops
    on the Python-only code (`.numpy() is not supported for tensor subclasses`,
    `GuardOnDataDependentSymNode` on a `float(t)`). An entry point that exports the module is held
    back while the code is there (no program is broken), and this finding says where.

    ## Example
    ```python
    class Calibrated(nn.Module):
        @torch.jit.ignore
        def calibrate(self, x):
            return torch.from_numpy(x.detach().numpy() * TABLE)

        def forward(self, x):
            return self.calibrate(self.lin(x))
    ```
    is reported at `x.detach().numpy()`.

    ## Fix safety
    Report only. Write the step with tensor operations, or make it an operator export keeps opaque:
    `@torch.library.custom_op("mylib::calibrate", mutates_args=())` with a `register_fake`
    implementation giving the output's shape and dtype. Left as it is, it holds back the entry
    points that export the module.
    """

    id = "TSX706"
    summary = "Python-only code in an `@torch.jit.ignore`/`unused` method that `forward` calls: torch.export traces into it"
    applicability = Applicability.NONE
    blocks_export = True
    triggers = ("jit.ignore", "jit.unused", "ignore", "unused")
    also_requires = (("Module",), ("forward",))

    VALID = [
        # not called from forward
        Valid("import numpy as np\nimport torch\n\n\nclass Net(torch.nn.Module):\n    @torch.jit.unused\n"
              "    def to_numpy(self, x):\n        return x.numpy()\n\n    def forward(self, x):\n        return x * 2\n"),
        # an ignored method with tensor code only
        Valid("import torch\n\n\nclass Net(torch.nn.Module):\n    @torch.jit.ignore\n    def helper(self, x):\n"
              "        return x.relu() * 2\n\n    def forward(self, x):\n        return self.helper(x)\n"),
        # not a module
        Valid("import torch\n\n\n@torch.jit.ignore\ndef f(x):\n    return x.numpy()\n"),
    ]
    INVALID = [
        Invalid(
            "import numpy as np\nimport torch\nfrom torch import nn\n\nTABLE = np.ones(3)\n\n\nclass Calibrated(nn.Module):\n"
            "    @torch.jit.ignore\n    def calibrate(self, x):\n        return torch.from_numpy(x.detach().numpy() * TABLE)\n\n"
            "    def forward(self, x):\n        return self.calibrate(x)\n",
            count=1,
        ),
        Invalid(
            "import torch\nfrom torch import nn\n\n\nclass Net(nn.Module):\n    @torch.jit.unused\n    def log(self, x):\n"
            "        print('mean', float(x.mean()))\n        return x\n\n    def forward(self, x):\n        y = self.log(x)\n"
            "        return y + 1\n",
            count=1,
        ),
    ]

    def __init__(self, context) -> None:
        super().__init__(context)
        self._local_modules: set[str] = set()

    def visit_ClassDef(self, node: cst.ClassDef) -> None:
        if not is_module_class(node, screened_base_names(self), self._local_modules):
            return
        self._local_modules.add(node.name.value)
        torch_only = torch_names(self)  # both ask only about torch's names
        info = module_info(node, torch_only)
        for method in traced_methods(node, info, torch_only):
            if not any(self.matches(d.decorator.func if isinstance(d.decorator, cst.Call) else d.decorator, *_IGNORES)
                       for d in method.decorators):
                continue
            found = self._python_only(method)
            if found is not None:
                self.report(
                    found,
                    f"`{method.name.value}` is kept out of TorchScript (`@torch.jit.ignore`/`unused`) and runs "
                    f"Python-only code (`{self.shown(found)}`), which torch.export traces into and cannot export: write "
                    "it with tensor operations, or make it a custom operator (`torch.library.custom_op` with a "
                    "fake implementation); the entry points exporting the module wait",
                )

    def _python_only(self, method: cst.FunctionDef) -> cst.CSTNode | None:
        """The first Python-only call in the method's body, in source order."""
        calls: list[cst.Call] = []

        class _V(cst.CSTVisitor):
            def visit_Call(self, n: cst.Call) -> None:
                calls.append(n)

            def visit_FunctionDef(self, n: cst.FunctionDef) -> bool:
                return n is method

        method.visit(_V())
        for call in calls:
            func = call.func
            if isinstance(func, cst.Attribute) and func.attr.value in _PYTHON_METHODS and not call.args:
                return call
            name = self.matches(func, *_PYTHON_FUNCTIONS)
            if name:
                if name in ("builtins.float", "builtins.int", "builtins.bool") and (not call.args or isinstance(
                        call.args[0].value, (cst.Integer, cst.Float, cst.SimpleString))):
                    continue  # a literal: no tensor read
                return call
            if self.matches_prefix(func, *_PYTHON_MODULES):
                return call
        return None
