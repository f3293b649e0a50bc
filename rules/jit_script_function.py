import libcst as cst

from ts2export.rule import Applicability, Invalid, Rule, Valid, argument
from ts2export.rule.callsites import compares_with_itself

from ts2export.rules._catalog_types_util import derives_from_module, local_def, remove_statement_edits


class JitScriptFunction(Rule):
    """
    ## What it does
    Turns TorchScript functions and classes back into plain Python: removes `@torch.jit.script`
    from a `def` or a `class` (a TorchScript class), deletes `f = torch.jit.script(f)`, and
    rewrites `g = torch.jit.script(h)` to `g = h` where `h` is a function or (non-module) class
    defined in the same file. `torch.jit.script(<module>)` is left to the artifact call-site rules
    (and, inside `__init__`, to TSX106).

    ## Why
    `torch.export` traces Python; it cannot trace into a `ScriptFunction`, and it does not need
    the function compiled. The plain function is what the exported graph should record.

    ## Example
    ```python
    @torch.jit.script
    def gelu_tanh(x):
        return 0.5 * x * (1 + torch.tanh(0.79788456 * (x + 0.044715 * x ** 3)))

    fast_norm = torch.jit.script(norm)
    ```
    becomes
    ```python
    def gelu_tanh(x):
        return 0.5 * x * (1 + torch.tanh(0.79788456 * (x + 0.044715 * x ** 3)))

    fast_norm = norm
    ```

    ## Fix safety
    Classes: safe (`torch.jit.script(cls)` returns the class itself in eager Python).
    Functions: unsafe. A `ScriptFunction` converts its arguments to the annotated types: a
    function annotated `x: float` and called with `3` returns `3.0` when scripted and `3` as plain
    Python (verified in torch 2.13); it also rejects arguments of the wrong type, which Python
    accepts. Tensor arithmetic is the same.

    It keeps TorchScript working where scripted code calls the function or class: TorchScript
    compiles it recursively without the decorator (tests/test_keeps_torchscript.py). Under a
    `torch.jit.trace` that stays it is held back: the trace would inline the function and bake
    its branches. A scripted function left in code that is exported holds that export back.

    In a test that calls the function itself beside what the script made (`g =
    torch.jit.script(f)`, then `assert_close(g(x), f(x))`), `g = f` would make the test compare
    `f` with itself: it is reported with no fix (write the test against known values).
    """

    id = "TSX105"
    summary = "TorchScript function or class (`@torch.jit.script`, `torch.jit.script(fn)`) becomes plain Python"
    applicability = Applicability.UNSAFE
    unit_site = True
    keeps_torchscript = True
    blocks_export = True

    VALID = [
        Valid("import torch\n\n\ndef f(x):\n    return x\n"),
        Valid("import torch\nfrom model import Net\nm = torch.jit.script(Net())\n"),
        Valid("import torch\n\n\nclass Net(torch.nn.Module):\n    pass\n\n\nm = torch.jit.script(Net())\n"),
    ]
    INVALID = [
        Invalid(
            "import torch\n\n\n@torch.jit.script\ndef f(x):\n    return x + 1\n\n\ny = f(torch.ones(1))\n",
            "import torch\n\n\ndef f(x):\n    return x + 1\n\n\ny = f(torch.ones(1))\n",
            unsafe=True,
        ),
        Invalid(
            "import torch\n\n\n@torch.jit.script\nclass Pair:\n    def __init__(self, a: int):\n        self.a = a\n\n\np = Pair(1)\n",
            "class Pair:\n    def __init__(self, a: int):\n        self.a = a\n\n\np = Pair(1)\n",
        ),
        Invalid(
            "import torch\n\n\ndef f(x):\n    return x + 1\n\n\nf = torch.jit.script(f)\ng = torch.jit.script(f)\ny = g(torch.ones(1))\n",
            "import torch\n\n\ndef f(x):\n    return x + 1\n\n\ng = f\ny = g(torch.ones(1))\n",
            unsafe=True,
            count=2,
        ),
        # reported, left alone: the test compares the scripted function with the function itself
        Invalid(
            "import torch\n\n\ndef f(x):\n    return x + 1\n\n\ndef test_f_scripts():\n    g = torch.jit.script(f)\n"
            "    x = torch.ones(2)\n    torch.testing.assert_close(g(x), f(x))\n",
            count=1,
            path="tests/test_f.py",
        ),
    ]

    def visit_Decorator(self, node: cst.Decorator) -> None:
        if isinstance(node.decorator, cst.Call) or not self.matches(node.decorator, "torch.jit.script"):
            return
        owner = self.parent(node)
        if isinstance(owner, cst.ClassDef):
            if derives_from_module(self, owner):
                return
            self.report(
                node,
                f"`@torch.jit.script` made `{owner.name.value}` a TorchScript class; in eager Python it returns the "
                "class unchanged: remove it",
                replacement=cst.RemovalSentinel.REMOVE,
                applicability=Applicability.SAFE,
            )
        elif isinstance(owner, cst.FunctionDef):
            self.report(
                node,
                f"`@torch.jit.script` compiles `{owner.name.value}` to a ScriptFunction, which torch.export cannot "
                "trace into; remove it (the scripted function converted arguments to their annotated types, "
                "plain Python does not)",
                replacement=cst.RemovalSentinel.REMOVE,
            )

    def visit_Call(self, node: cst.Call) -> None:
        if not self.matches(node.func, "torch.jit.script"):
            return
        if any(a.keyword is not None and a.keyword.value != "obj" for a in node.args) or len(node.args) != 1:
            return
        target = argument(node, 0, "obj")
        if not isinstance(target, (cst.Name, cst.Attribute)):
            return
        definition = local_def(self, target) if isinstance(target, cst.Name) else None
        if definition is None:
            # Defined in another file (or a library): the program model knows what it is.
            found = self.object_kind(target)
            if found not in ("function", "class") or self.context.program.kind_of(self._name(target)) == "script-module-class":
                return
            is_class = found == "class"
        else:
            is_class = isinstance(definition, cst.ClassDef)
            if is_class and derives_from_module(self, definition):
                return
        kind = "class" if is_class else "function"
        applicability = Applicability.SAFE if is_class and definition is not None else Applicability.UNSAFE
        parent = self.parent(node)
        shown = self.code_of(target)
        if not is_class and compares_with_itself(self, node, target):
            self.report(
                node,
                f"`torch.jit.script({shown})` compiles the function for TorchScript only; this test calls "
                f"`{shown}` itself as well, so with `{shown}` in its place it would compare `{shown}` with itself: "
                "make the test check the function's result against known values, then drop the script call",
            )
            return
        if (
            isinstance(target, cst.Name)
            and isinstance(parent, cst.Assign)
            and len(parent.targets) == 1
            and isinstance(parent.targets[0].target, cst.Name)
            and parent.targets[0].target.value == target.value
        ):
            self.report(
                node,
                f"`{target.value} = torch.jit.script({target.value})` compiles the {kind} for TorchScript only; "
                "delete the statement and use the plain Python definition",
                edits=remove_statement_edits(self, parent),
                applicability=applicability,
                about=definition,
            )
            return
        self.report(
            node,
            f"`torch.jit.script({shown})` compiles the {kind} for TorchScript only; use `{shown}` itself",
            replacement=target,
            applicability=applicability,
            about=definition,
        )

    def _name(self, node: cst.BaseExpression) -> str | None:
        names = sorted(self.qualnames(node))
        return names[0] if names else None
