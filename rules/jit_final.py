import libcst as cst

from ts2export.rule import Applicability, Edit, Import, Invalid, Rule, Valid

from ts2export.rules._catalog_types_util import binds, global_assignments, module_imports

_FINAL = ("torch.jit.Final", "torch._jit_internal.Final")


class JitFinal(Rule):
    """
    ## What it does
    Replaces `torch.jit.Final` with `typing.Final`: `x: torch.jit.Final[int]` becomes
    `x: Final[int]` (with `from typing import Final`, or `typing.Final` where the file uses
    `import typing`), and `from torch.jit import Final` becomes `from typing import Final`.

    ## Why
    `torch.jit.Final` is a re-export of `typing.Final` that TorchScript reads to treat a module
    attribute as a constant. Spelling it `typing.Final` keeps the meaning (TorchScript, type
    checkers and readers all understand it) without a dependency on `torch.jit`.

    ## Example
    ```python
    from torch.jit import Final

    class Net(nn.Module):
        scale: Final[float]
    ```
    becomes
    ```python
    from typing import Final

    class Net(nn.Module):
        scale: Final[float]
    ```

    ## Fix safety
    Safe: `torch.jit.Final is typing.Final` (verified in torch 2.13).

    It keeps TorchScript and traces working: `torch.jit.Final` is `typing.Final`
    (tests/test_keeps_torchscript.py).
    """

    id = "TSX203"
    summary = "`torch.jit.Final` is `typing.Final`"
    applicability = Applicability.SAFE
    keeps_torchscript = True
    keeps_tracing = True
    triggers = ("Final",)

    VALID = [
        Valid("from typing import Final\n\nx: Final[int] = 3\n"),
        Valid("import typing\n\nx: typing.Final = 3\n"),
    ]
    INVALID = [
        Invalid(
            "import torch\n\n\nclass Net(torch.nn.Module):\n    k: torch.jit.Final[int]\n\n    def __init__(self):\n"
            "        super().__init__()\n        self.k = 2\n",
            "import torch\nfrom typing import Final\n\n\nclass Net(torch.nn.Module):\n    k: Final[int]\n\n"
            "    def __init__(self):\n        super().__init__()\n        self.k = 2\n",
        ),
        Invalid(
            "import typing\nfrom torch import jit\n\nx: jit.Final[int] = 3\ny: typing.List[int] = []\n",
            "import typing\n\nx: typing.Final[int] = 3\ny: typing.List[int] = []\n",
        ),
        Invalid(
            "from torch.jit import Final\n\nx: Final[int] = 3\ny: Final[str] = 'a'\n",
            "from typing import Final\n\nx: Final[int] = 3\ny: Final[str] = 'a'\n",
            count=2,
        ),
        Invalid(
            "from torch.jit import Final, ignore\n\nx: Final[int] = 3\n\n\n@ignore\ndef f():\n    pass\n",
            "from torch.jit import ignore\nfrom typing import Final\n\nx: Final[int] = 3\n\n\n@ignore\ndef f():\n    pass\n",
        ),
    ]

    def __init__(self, context) -> None:
        super().__init__(context)
        self._imports: list = []

    def visit_Module(self, node: cst.Module) -> None:
        self._imports = module_imports(node)

    def visit_Attribute(self, node: cst.Attribute) -> None:
        if node.attr.value != "Final" or not self.matches(node, *_FINAL) or self.in_import(node):
            return
        if any(binds(i, "typing", "Final", "Final") for i in self._imports):
            replacement, imports = cst.Name("Final"), []
        elif any(binds(i, "typing", None, "typing") for i in self._imports):
            replacement, imports = cst.parse_expression("typing.Final"), []
        elif self._final_is_free(node):
            replacement, imports = cst.Name("Final"), [Import("typing", "Final")]
        else:
            replacement, imports = cst.parse_expression("typing.Final"), [Import("typing")]
        self.report(
            node,
            f"`{self.shown(node)}` is `typing.Final`; spell it `{self.shown(replacement)}`",
            replacement=replacement,
            imports=imports,
        )

    def _final_is_free(self, node: cst.CSTNode) -> bool:
        for a in global_assignments(self, node, "Final"):
            stmt = getattr(a, "node", None)
            if not (isinstance(stmt, cst.ImportFrom) and self._is_final_import(stmt)):
                return False
        return True

    def _is_final_import(self, stmt: cst.ImportFrom) -> bool:
        return any(binds(stmt, m, "Final", "Final") for m in ("typing", "torch.jit", "torch._jit_internal"))

    def visit_Name(self, node: cst.Name) -> None:
        if not self.may_be_named(node, _FINAL):
            return  # (before asking for the parent: most names of a file are not `Final`)
        parent = self.parent(node)
        if isinstance(parent, cst.Attribute) and parent.attr is node:
            return
        if not self.matches(node, *_FINAL) or self.in_import(node):
            return
        statement = None
        for a in global_assignments(self, node, node.value):
            stmt = getattr(a, "node", None)
            if isinstance(stmt, cst.ImportFrom) and any(
                binds(stmt, m, "Final", node.value) for m in ("torch.jit", "torch._jit_internal")
            ):
                statement = stmt
        if statement is None:
            self.report(node, f"`{node.value}` is `torch.jit.Final`, i.e. `typing.Final`; import it from `typing`")
            return
        self.report(
            node,
            f"`{node.value}` comes from `torch.jit`; it is `typing.Final`: import it from `typing`",
            **self._import_fix(statement, node.value),
        )

    def _import_fix(self, stmt: cst.ImportFrom, bound: str) -> dict:
        names = list(stmt.names)
        mine = next(a for a in names if a.evaluated_name == "Final" and (a.evaluated_alias or "Final") == bound)
        asname = bound if bound != "Final" else None
        if len(names) == 1:
            new = stmt.with_changes(module=cst.Name("typing"), relative=[])
            return {"edits": [Edit(stmt, new)]}
        rest = [a for a in names if a is not mine]
        rest[-1] = rest[-1].with_changes(comma=cst.MaybeSentinel.DEFAULT)
        new = stmt.with_changes(names=rest)
        return {"edits": [Edit(stmt, new)], "imports": [Import("typing", "Final", asname)]}
