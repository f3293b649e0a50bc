import libcst as cst

from ts2export.rule import Applicability, Edit, Import, Invalid, Rule, Valid

from ._module_walk import is_module_class, screened_base_names

_NAMEDTUPLE = ("typing.NamedTuple", "typing_extensions.NamedTuple")
_NAMEDTUPLE_FUNCTIONS = ("collections.namedtuple", "typing.NamedTuple")
_DATACLASS = ("dataclasses.dataclass",)
# Top-level packages whose types are not the run's own.
_LIBRARIES = {"torch", "typing", "typing_extensions", "collections", "numpy", "builtins", "dataclasses", "abc"}


class StructuredOutputPytree(Rule):
    """
    ## What it does
    Finds the `NamedTuple` and dataclass types that the `forward` of an `nn.Module` returns (its
    return annotation, or the constructor it returns), and registers each one with torch's pytree
    under a serialized name, right after its definition:
    `torch.utils._pytree._register_namedtuple(Detections, serialized_type_name=...)` for a named
    tuple, `torch.export.register_dataclass(Result, serialized_type_name=...)` for a dataclass.
    Where the type is defined in another file, it is reported at the `forward` instead.

    ## Why
    TorchScript saved a module returning a named tuple as it was. `torch.export` exports it, but
    `torch.export.save` refuses an output structure it has no serialized name for ("Can't serialize
    TreeSpec of namedtuple class ... Please register using `_register_namedtuple`"), and
    `torch.export.load` needs the same registration in the process that loads the program. Done where
    the type is defined, the registration runs wherever the type is imported: in the writer and in
    every reader.

    ## Example
    ```python
    class Detections(NamedTuple):
        boxes: torch.Tensor
        scores: torch.Tensor
    ```
    gets, after the class,
    ```python
    torch.utils._pytree._register_namedtuple(Detections, serialized_type_name=f"{Detections.__module__}.{Detections.__qualname__}")
    ```

    ## Fix safety
    Safe for a named tuple: pytree already flattened named tuples into their fields; the
    registration only gives the type a name for serialization (checked on torch 2.13: the same
    tree before and after, save and load round-trip, the loaded program returns a `Detections`).
    The function is private to torch; a later release may spell it differently. Unsafe for a
    dataclass: registering it makes pytree flatten its instances into their fields, where pytree
    kept them whole before (code that maps over pytrees holding it sees the fields). A type defined in
    another file is reported, not fixed: it holds back the entry points exporting the module until
    it is registered where it is defined. The registration is a statement beside the type, which
    neither TorchScript nor `torch.jit.trace` reads (a scripted module still returns the named tuple,
    a traced one still a plain tuple; tests/test_keeps_torchscript.py), so it is made where an entry
    point that stays TorchScript still compiles the module.
    """

    id = "TSX309"
    summary = "A `NamedTuple` / dataclass output of `forward` is registered with pytree, so the exported program saves and loads"
    applicability = Applicability.SAFE
    blocks_export = True
    keeps_torchscript = True
    keeps_tracing = True
    # a structured type defined here, or one returned by a forward here (annotated or constructed)
    triggers = ("forward",)
    also_requires = (("Module",),)

    VALID = [
        # a named tuple that no forward returns
        Valid("from typing import NamedTuple\nimport torch\n\n\nclass Pair(NamedTuple):\n    a: int\n    b: int\n\n\n"
              "class Net(torch.nn.Module):\n    def forward(self, x):\n        return x\n"),
        # already registered
        Valid("from typing import NamedTuple\nimport torch\n\n\nclass Out(NamedTuple):\n    y: torch.Tensor\n\n\n"
              "torch.utils._pytree._register_namedtuple(Out, serialized_type_name='m.Out')\n\n\n"
              "class Net(torch.nn.Module):\n    def forward(self, x) -> Out:\n        return Out(x)\n"),
    ]
    INVALID = [
        Invalid(
            "from typing import NamedTuple\n\nimport torch\nfrom torch import nn\n\n\nclass Out(NamedTuple):\n"
            "    y: torch.Tensor\n    z: torch.Tensor\n\n\nclass Net(nn.Module):\n    def forward(self, x) -> Out:\n"
            "        return Out(x + 1, x * 2)\n",
            "from typing import NamedTuple\n\nimport torch\nfrom torch import nn\n\n\nclass Out(NamedTuple):\n"
            "    y: torch.Tensor\n    z: torch.Tensor\n\n\n"
            "torch.utils._pytree._register_namedtuple(Out, serialized_type_name=f\"{Out.__module__}.{Out.__qualname__}\")\n\n\n"
            "class Net(nn.Module):\n    def forward(self, x) -> Out:\n        return Out(x + 1, x * 2)\n",
        ),
        Invalid(
            "import torch\nfrom torch import nn\nfrom .types import Out\n\n\nclass Net(nn.Module):\n"
            "    def forward(self, x) -> Out:\n        return Out(x + 1, x * 2)\n",
            None,
            count=1,
        ),
    ]

    def __init__(self, context) -> None:
        super().__init__(context)
        self._local_modules: set[str] = set()
        self._structured: dict[str, tuple[cst.CSTNode, str]] = {}  # name -> (its definition statement, "namedtuple"/"dataclass")
        self._registered: set[str] = set()
        self._returned: list[tuple[str, cst.CSTNode]] = []  # (type name, where a forward returns it)

    def visit_Module(self, node: cst.Module) -> None:
        for stmt in node.body:
            if isinstance(stmt, cst.ClassDef):
                if any(self.matches(b.value, *_NAMEDTUPLE) for b in stmt.bases):
                    self._structured[stmt.name.value] = (stmt, "namedtuple")
                elif any(self.matches(d.decorator.func if isinstance(d.decorator, cst.Call) else d.decorator, *_DATACLASS)
                         for d in stmt.decorators):
                    self._structured[stmt.name.value] = (stmt, "dataclass")
            elif isinstance(stmt, cst.SimpleStatementLine):
                for small in stmt.body:
                    if isinstance(small, cst.Assign) and len(small.targets) == 1 and isinstance(small.targets[0].target, cst.Name) \
                            and isinstance(small.value, cst.Call) and self.matches(small.value.func, *_NAMEDTUPLE_FUNCTIONS):
                        self._structured[small.targets[0].target.value] = (stmt, "namedtuple")
                    if isinstance(small, cst.Expr) and isinstance(small.value, cst.Call) and small.value.args and \
                            self.matches_prefix(small.value.func, "torch.utils._pytree", "torch.export") and \
                            isinstance(small.value.args[0].value, cst.Name):
                        self._registered.add(small.value.args[0].value.value)

    def visit_ClassDef(self, node: cst.ClassDef) -> None:
        if not is_module_class(node, screened_base_names(self), self._local_modules):
            return
        self._local_modules.add(node.name.value)
        for stmt in node.body.body:
            if not (isinstance(stmt, cst.FunctionDef) and stmt.name.value == "forward"):
                continue
            if stmt.returns is not None and isinstance(stmt.returns.annotation, cst.Name):
                self._returned.append((stmt.returns.annotation.value, stmt.returns.annotation))
            returns: list[cst.Return] = []

            class _V(cst.CSTVisitor):
                def visit_Return(self, n: cst.Return) -> None:
                    returns.append(n)

                def visit_FunctionDef(self, n: cst.FunctionDef) -> bool:
                    return n is stmt

            stmt.visit(_V())
            for ret in returns:
                if isinstance(ret.value, cst.Call) and isinstance(ret.value.func, cst.Name):
                    self._returned.append((ret.value.func.value, ret.value))

    def leave_Module(self, original_node: cst.Module) -> None:
        done: set[str] = set()
        for name, where in self._returned:
            if name in done or name in self._registered:
                continue
            done.add(name)
            if name in self._structured:
                stmt, kind = self._structured[name]
                self._register(name, stmt, kind)
            elif self._maybe_structured(where if isinstance(where, cst.Name) else where.func):
                self.report(
                    where,
                    f"`forward` returns `{name}`, which may be a named tuple or dataclass of another module: "
                    "`torch.export.save` needs such a type registered with pytree "
                    f"(`torch.utils._pytree._register_namedtuple({name}, serialized_type_name=...)`, "
                    "`torch.export.register_dataclass`) where it is defined; the entry points exporting this module wait",
                )

    def _maybe_structured(self, node: cst.CSTNode) -> bool:
        """Whether an imported name may be a structured type of another module: the program model
        says so, or cannot say (a class of the run it did not look at), and it is not a library's."""
        names = sorted(self.qualnames(node))
        if not names or any(n.split(".", 1)[0] in _LIBRARIES or n.startswith("builtins.") for n in names):
            return False
        kinds = {self.context.program.kind_of(n) for n in names} - {None}
        if kinds:
            return "structured-class" in kinds
        return isinstance(node, cst.Name) and node.value[:1].isupper() and "." in names[0]

    def _register(self, name: str, stmt: cst.CSTNode, kind: str) -> None:
        serialized = f'f"{{{name}.__module__}}.{{{name}.__qualname__}}"'
        if kind == "namedtuple":
            call = f"torch.utils._pytree._register_namedtuple({name}, serialized_type_name={serialized})"
            applicability = Applicability.SAFE
        else:
            call = f"torch.export.register_dataclass({name}, serialized_type_name={serialized})"
            applicability = Applicability.UNSAFE
        line = cst.parse_statement(call + "\n").with_changes(leading_lines=[cst.EmptyLine(indent=False)] * 2)
        target = stmt.name if isinstance(stmt, cst.ClassDef) else stmt
        self.report(
            target,
            f"`{name}` is returned by a module's `forward`: register it with pytree under a serialized name, or "
            f"`torch.export.save` of the exported program fails (`{call.split('(')[0]}`)",
            edits=[Edit(stmt, cst.FlattenSentinel([stmt, line]))],
            imports=[Import("torch")],
            applicability=applicability,
        )
