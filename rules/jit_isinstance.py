import libcst as cst

from ts2export.rule import Applicability, Import, Invalid, Rule, Valid, argument

from ts2export.rules._catalog_types_util import global_assignments

_CONTAINERS = {
    "typing.List": "list", "builtins.list": "list",
    "typing.Dict": "dict", "builtins.dict": "dict",
    "typing.Tuple": "tuple", "builtins.tuple": "tuple",
    "typing.Optional": "Optional", "typing.Union": "Union",
}


class JitIsinstance(Rule):
    """
    ## What it does
    Replaces `torch.jit.isinstance(x, T)` with the built-in `isinstance(x, T)` where `T` is a
    plain class (`Tensor`, `int`, `str`, a user class) or a tuple of them. For generic container
    types (`List[int]`, `Dict[str, Tensor]`, `Optional[...]`, `Tuple[...]`) it reports the
    check to write instead, e.g. `isinstance(x, list) and all(isinstance(v, int) for v in x)`.

    ## Why
    `torch.jit.isinstance` existed so TorchScript could refine container types. In eager Python
    it is a slow deep check; for a plain class it is exactly `isinstance`. Under `torch.export`
    the types of non-tensor inputs are fixed at export time, so the check is usually decided once;
    a person should decide how deep a container check needs to be.

    ## Example
    ```python
    if torch.jit.isinstance(x, torch.Tensor):
        ...
    ```
    becomes
    ```python
    if isinstance(x, torch.Tensor):
        ...
    ```

    ## Fix safety
    Safe for plain classes and tuples of them: in eager Python `torch.jit.isinstance` ends in
    `isinstance(obj, target_type)` for them (verified in torch 2.13). Container types are
    reported without a fix.

    It keeps TorchScript and traces working for plain classes (tests/test_keeps_torchscript.py).
    """

    id = "TSX204"
    summary = "`torch.jit.isinstance(x, T)` is `isinstance` for plain classes; container types need a manual check"
    applicability = Applicability.SAFE
    keeps_torchscript = True
    keeps_tracing = True

    VALID = [
        Valid("import torch\nok = isinstance(torch.ones(1), torch.Tensor)\n"),
    ]
    INVALID = [
        Invalid(
            "import torch\nok = torch.jit.isinstance(torch.ones(1), torch.Tensor)\n",
            "import torch\nok = isinstance(torch.ones(1), torch.Tensor)\n",
        ),
        Invalid(
            "import torch\n\n\ndef f(x):\n    return torch.jit.isinstance(x, (int, float))\n",
            "def f(x):\n    return isinstance(x, (int, float))\n",
        ),
        Invalid(
            "import torch\nfrom typing import List\n\n\ndef f(x):\n    return torch.jit.isinstance(x, List[int])\n",
            None,
            count=1,
        ),
        Invalid(
            "from torch.jit import isinstance\n\n\ndef f(x):\n    return isinstance(x, int)\n",
            "import builtins\n\n\ndef f(x):\n    return builtins.isinstance(x, int)\n",
        ),
    ]

    def visit_Call(self, node: cst.Call) -> None:
        if not self.matches(node.func, "torch.jit.isinstance"):
            return
        obj = argument(node, 0, "obj")
        target = argument(node, 1, "target_type")
        if obj is None or target is None:
            return
        if self._plain(target):
            if isinstance(node.func, cst.Name) and node.func.value == "isinstance" or self._shadowed(node):
                func, imports = cst.parse_expression("builtins.isinstance"), [Import("builtins")]
            else:
                func, imports = cst.Name("isinstance"), []
            self.report(
                node,
                "`torch.jit.isinstance` with a plain class is the built-in `isinstance`; use it",
                replacement=node.with_changes(func=func),
                imports=imports,
            )
            return
        check = self._check(self.code_of(obj), target, 0)
        hint = f": e.g. `{check}`" if check else ""
        self.report(
            node,
            f"`torch.jit.isinstance(..., {self.shown(target)})` refined a container type for TorchScript; "
            f"write the check you need with the built-in `isinstance`{hint} (under torch.export, input types "
            "are fixed when the program is exported)",
            applicability=Applicability.NONE,
        )

    def _shadowed(self, node: cst.CSTNode) -> bool:
        return any(getattr(a, "node", None) is not None for a in global_assignments(self, node, "isinstance"))

    def _container(self, node: cst.BaseExpression) -> str | None:
        for q in self.qualnames(node):
            if q in _CONTAINERS:
                return _CONTAINERS[q]
        return None

    def _plain(self, target: cst.BaseExpression) -> bool:
        if isinstance(target, cst.Tuple):
            return all(self._plain(e.value) for e in target.elements if not isinstance(e, cst.StarredElement)) and all(
                not isinstance(e, cst.StarredElement) for e in target.elements)
        if not isinstance(target, (cst.Name, cst.Attribute)):
            return False
        if self._container(target) is not None:
            return False
        return not any(q.startswith("typing.") for q in self.qualnames(target))

    def _check(self, expr: str, target: cst.BaseExpression, depth: int) -> str | None:
        """A built-in check equivalent to eager `torch.jit.isinstance(expr, target)`, if simple."""
        if self._plain(target):
            return f"isinstance({expr}, {self.code_of(target)})"
        if not isinstance(target, cst.Subscript):
            return None
        kind = self._container(target.value)
        args = [e.slice.value for e in target.slice if isinstance(e.slice, cst.Index)]
        if kind is None or len(args) != len(target.slice):
            return None
        v = "v" if depth == 0 else f"v{depth}"
        if kind == "list" and len(args) == 1:
            inner = self._check(v, args[0], depth + 1)
            return inner and f"isinstance({expr}, list) and all({inner} for {v} in {expr})"
        if kind == "dict" and len(args) == 2:
            k = "k" if depth == 0 else f"k{depth}"
            kc, vc = self._check(k, args[0], depth + 1), self._check(v, args[1], depth + 1)
            return kc and vc and f"isinstance({expr}, dict) and all({kc} and {vc} for {k}, {v} in {expr}.items())"
        if kind == "tuple":
            parts = [self._check(f"{expr}[{i}]", a, depth + 1) for i, a in enumerate(args)]
            if not all(parts):
                return None
            return " and ".join([f"isinstance({expr}, tuple)", f"len({expr}) == {len(args)}", *parts])
        if kind == "Optional" and len(args) == 1:
            inner = self._check(expr, args[0], depth + 1)
            return inner and f"{expr} is None or ({inner})"
        return None
