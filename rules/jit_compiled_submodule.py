import libcst as cst

from ts2export.rule import Applicability, Invalid, Rule, Valid, argument

from ts2export.rules._catalog_types_util import enclosing_class_of_def, local_def, remove_statement_edits


class JitCompiledSubmodule(Rule):
    """
    ## What it does
    Inside a module's `__init__`, replaces a scripted or traced submodule with the eager one:
    `self.block = torch.jit.script(Block())` becomes `self.block = Block()`,
    `self.enc = torch.jit.trace(Enc(), example)` becomes `self.enc = Enc()`, and
    `self.block = torch.jit.script(self.block)` is deleted.

    ## Why
    `torch.export` traces the Python `forward` of the model; it cannot trace through a
    `ScriptModule` child ("A scripted or traced child module inside an eager module breaks
    export"). The eager child is what the exported graph should record.

    ## Example
    ```python
    class Net(nn.Module):
        def __init__(self):
            super().__init__()
            self.block = torch.jit.script(Block())
            self.enc = torch.jit.trace(Encoder(), torch.randn(1, 8))
    ```
    becomes
    ```python
    class Net(nn.Module):
        def __init__(self):
            super().__init__()
            self.block = Block()
            self.enc = Encoder()
    ```

    ## Fix safety
    Unsafe. A scripted child converted non-tensor arguments to their annotated types; the eager
    child does not. A traced child is worse: the trace baked in the branches and `.item()`
    values it saw on the example input, so the eager child (which runs every branch for real)
    computes different results wherever the inputs take another branch (verified: a child with
    `if x.sum() > 0: return x * 2` / `return -x`, traced on `torch.ones(2)`, returns `[-2, -2]` for
    `-torch.ones(2)` where the eager child returns `[1, 1]`). That is usually a bug
    fix, but check the outputs. The example input expression is no longer evaluated by the trace;
    arguments are kept only where they are the module itself.

    A call site: it migrates with its unit. Where the parent module stays scripted or traced, it
    is held back (a traced child was compiled differently from the eager one; a scripted child
    kept its control flow in a trace).
    """

    id = "TSX106"
    summary = "Scripted or traced submodule stored in `__init__` becomes the eager submodule"
    applicability = Applicability.UNSAFE
    unit_site = True
    blocks_export = True

    VALID = [
        Valid("import torch\n\n\nclass Net(torch.nn.Module):\n    def __init__(self):\n        super().__init__()\n"
              "        self.block = torch.nn.Linear(2, 2)\n"),
        Valid("import torch\n\n\ndef build():\n    return torch.jit.script(torch.nn.Linear(2, 2))\n"),
    ]
    INVALID = [
        Invalid(
            "import torch\n\n\nclass Net(torch.nn.Module):\n    def __init__(self):\n        super().__init__()\n"
            "        self.block = torch.jit.script(torch.nn.Linear(2, 2))\n"
            "        self.enc = torch.jit.trace(torch.nn.ReLU(), torch.randn(1, 2))\n",
            "import torch\n\n\nclass Net(torch.nn.Module):\n    def __init__(self):\n        super().__init__()\n"
            "        self.block = torch.nn.Linear(2, 2)\n"
            "        self.enc = torch.nn.ReLU()\n",
            unsafe=True,
            count=2,
        ),
        Invalid(
            "import torch\n\n\nclass Net(torch.nn.Module):\n    def __init__(self, block):\n        super().__init__()\n"
            "        self.block = block\n        self.block = torch.jit.script(self.block)\n\n"
            "    def forward(self, x):\n        return self.block(x)\n",
            "import torch\n\n\nclass Net(torch.nn.Module):\n    def __init__(self, block):\n        super().__init__()\n"
            "        self.block = block\n\n"
            "    def forward(self, x):\n        return self.block(x)\n",
            unsafe=True,
        ),
        Invalid(
            "from torch import jit, nn\n\n\nclass Net(nn.Module):\n    def __init__(self):\n        super().__init__()\n"
            "        self.heads = nn.ModuleList([jit.script(nn.Linear(2, 2)) for _ in range(2)])\n",
            "from torch import nn\n\n\nclass Net(nn.Module):\n    def __init__(self):\n        super().__init__()\n"
            "        self.heads = nn.ModuleList([nn.Linear(2, 2) for _ in range(2)])\n",
            unsafe=True,
        ),
    ]

    def visit_Call(self, node: cst.Call) -> None:
        kind = self.matches(node.func, "torch.jit.script", "torch.jit.trace")
        if not kind or not self._in_init(node):
            return
        short = kind.rsplit(".", 1)[1]
        module = argument(node, 0, "obj" if short == "script" else "func")
        if module is None or isinstance(module, cst.Lambda):
            return
        if isinstance(module, cst.Name) and local_def(self, module) is not None:
            return  # a plain function or class: TSX105
        code = self.code_of(module)
        if short == "script":
            why = ("a scripted child converted non-tensor arguments to their annotated types, the eager one does not")
        else:
            why = ("the trace baked in the branches and `.item()` values taken on its example input; the eager child "
                   "runs every branch for real, so outputs differ where inputs take another branch")
        message = (f"`torch.jit.{short}(...)` stores a TorchScript submodule, which torch.export cannot trace through; "
                   f"store the eager `{code}` ({why})")
        parent = self.parent(node)
        if (
            isinstance(parent, cst.Assign)
            and len(parent.targets) == 1
            and self.code_of(parent.targets[0].target) == code
        ):
            self.report(node, message, edits=remove_statement_edits(self, parent))
            return
        self.report(node, message, replacement=self.substitute(node, module))

    def _in_init(self, node: cst.CSTNode) -> bool:
        current = self.parent(node)
        while current is not None:
            if isinstance(current, cst.FunctionDef):
                return current.name.value == "__init__" and enclosing_class_of_def(self, current) is not None
            if isinstance(current, (cst.Lambda, cst.ClassDef)):
                return False
            current = self.parent(current)
        return False
