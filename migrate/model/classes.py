"""Class hierarchies of the run: the ``torch.jit.ScriptModule`` subclasses a class derives from,
and the subclasses of a class."""

from __future__ import annotations

import ast

from ts2export.model.files import Files
from ts2export.model.memo import MAX_DEPTH
from ts2export.model.names import Names
from ts2export.model.pyfile import Def, PyFile
from ts2export.model.torchapi import SCRIPT_MODULES

STRUCTURED_BASES = {"typing.NamedTuple", "typing_extensions.NamedTuple"}


class Classes:
    def __init__(self, files: Files, names: Names) -> None:
        self.files = files
        self.names = names
        self._roots: dict[tuple[str, str, int], list] = {}  # script_module_roots's answers
        self._subclasses: dict[tuple[str, str], frozenset] = {}  # subclasses's answers

    def script_module_roots(self, f: PyFile, d: Def, depth: int = 0) -> list[tuple[str, str]]:
        """The ScriptModule subclasses (naming ``torch.jit.ScriptModule`` directly) that ``d`` is or
        derives from."""
        if depth > MAX_DEPTH or d.kind != "class":
            return []
        key = (f.path, d.qualname, depth)
        if key not in self._roots:
            self._roots[key] = self._find_roots(f, d, depth)
        return list(self._roots[key])

    def _find_roots(self, f: PyFile, d: Def, depth: int) -> list[tuple[str, str]]:
        out = []
        for base in d.node.bases:
            if self.names.qualified(f, base) in SCRIPT_MODULES:
                out.append((f.path, d.qualname))
                continue
            found = self.names.def_of(f, base)
            if found is not None:
                out.extend(self.script_module_roots(found[0], found[1], depth + 1))
        return out

    def structured(self, f: PyFile, d: Def) -> bool:
        """Whether a class is a named tuple or a dataclass (its instances are pytree structures)."""
        if any(self.names.qualified(f, b) in STRUCTURED_BASES for b in d.node.bases):
            return True
        for dec in d.node.decorator_list:
            target = dec.func if isinstance(dec, ast.Call) else dec
            if self.names.qualified(f, target) == "dataclasses.dataclass":
                return True
        return False

    def subclasses(self, path: str, qualname: str) -> set[tuple[str, str]]:
        """The classes of the run that name the class ``qualname`` of ``path`` as a direct base
        (each class asked about once: `self` in every method of every module asks about its class,
        and torch.nn.Module's subclasses are most of a large package)."""
        known = self._subclasses.get((path, qualname))
        if known is None:
            known = self._subclasses[(path, qualname)] = frozenset(self._find_subclasses(path, qualname))
        return set(known)

    def _find_subclasses(self, path: str, qualname: str) -> set[tuple[str, str]]:
        out = set()
        for f in self.files.naming(qualname.rsplit(".", 1)[-1].encode()):
            for d in f.defs:
                if d.kind == "class":
                    for base in d.node.bases:
                        found = self.names.def_of(f, base)
                        if found is not None and (found[0].path, found[1].qualname) == (path, qualname):
                            out.add((f.path, d.qualname))
        return out
