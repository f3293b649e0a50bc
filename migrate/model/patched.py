"""Which classes of the run TorchScript cannot compile on first use, so that a kept script needs
their `@torch.jit.script` (or `X = torch.jit.script(X)`): classes given attributes from outside
their own body (`SparseTensor.__matmul__ = lambda self, other: matmul(self, other)` in another
module), and dataclasses.

`@torch.jit.script` on a class compiles the class as its body is written, when the decorator runs.
Without the decorator, TorchScript compiles the class when scripted code first uses it, with every
attribute the class has by then: a patched lambda or a plain function there makes that compile
fail (`RuntimeError: Expected <function <lambda>> to be a function`, checked on torch 2.13), so
removing the decorator of such a class does not keep the code that scripts it compiling. A
`@dataclass` gets methods (`__repr__`, `__eq__`, its `__init__`) that have no source: compiled on
first use, the class fails (`OSError: could not get source code`, checked on torch 2.13), while
`torch.jit.script(X)` of the dataclass itself compiles it."""

from __future__ import annotations

import ast

from ts2export.model.files import Files
from ts2export.model.names import Names


class Patched:
    def __init__(self, files: Files, names: Names) -> None:
        self.files = files
        self.names = names
        self._answers: dict[tuple[str, str], str | None] = {}

    def why(self, path: str, qualname: str) -> str | None:
        """Why TorchScript cannot compile the class ``qualname`` of ``path`` on first use, as a
        clause ("with the attribute file:line gives it", "with the methods `@dataclass` generates"),
        or None."""
        where = self.where(path, qualname)
        if where is not None:
            return f"with the attribute {where} gives it, which it cannot compile"
        own = self.files.file(path)
        d = own.def_by_qualname.get(qualname) if own is not None else None
        if d is not None and d.kind == "class" and any(
                (self.names.qualified(own, dec.func if isinstance(dec, ast.Call) else dec) or "") == "dataclasses.dataclass"
                for dec in d.node.decorator_list):
            return ("with the methods `@dataclass` generates, which have no source (`OSError: could not get source "
                    "code`)")
        return None

    def where(self, path: str, qualname: str) -> str | None:
        """``file:line`` of the first assignment, outside its body, of an attribute of the class
        ``qualname`` of ``path`` (the class itself, by any name it is imported by); None if none."""
        key = (path, qualname)
        if key not in self._answers:
            self._answers[key] = self._find(path, qualname)
        return self._answers[key]

    def _find(self, path: str, qualname: str) -> str | None:
        own = self.files.file(path)
        d = own.def_by_qualname.get(qualname) if own is not None else None
        if d is None or d.kind != "class":
            return None
        name = qualname.rsplit(".", 1)[-1]
        for f in self.files.naming(name.encode()):
            for node in f.walk():
                targets = node.targets if isinstance(node, ast.Assign) else (
                    [node.target] if isinstance(node, (ast.AnnAssign, ast.AugAssign)) else [])
                for t in targets:
                    if not isinstance(t, ast.Attribute) or not isinstance(t.value, (ast.Name, ast.Attribute)):
                        continue
                    if f.path == path and d.contains((t.lineno, t.col_offset)):
                        continue  # in its own body (a method's `self.x = ...` names no class anyway)
                    found = self.names.def_of(f, t.value)
                    if found is not None and found[0].path == path and found[1].qualname == qualname:
                        return f"{f.path}:{t.lineno}"
        return None
