"""Who calls what: the call sites in the run of a function, a method or a class (its
constructor), and the callee of each call that the run defines."""

from __future__ import annotations

import ast

from ts2export.model.files import Files
from ts2export.model.memo import MAX_DEPTH
from ts2export.model.names import Names
from ts2export.model.pyfile import Def, PyFile
from ts2export.model.torchapi import SELF_METHODS

#: Methods called without being named (``m(x)`` runs ``forward``), or by Python itself.
CALL_METHODS = {"forward", "__call__", "__init__"}


class Calls:
    def __init__(self, files: Files, names: Names) -> None:
        self.files = files
        self.names = names
        self._calls: dict[str, list] | None = None  # path -> [(call, callee)]
        self._callers: dict[tuple[str, str], list] = {}  # (path, qualname) -> calls_of's answer

    def calls_of(self, path: str, qualname: str) -> list[tuple[PyFile, ast.Call]]:
        """Call sites in the run of the function (or class: its constructor) ``qualname`` of ``path``.
        Only files whose text names it are parsed for this."""
        # a file that calls it names it (or, for a method, names its class: the instance is made
        # there, or the call is `self.method()` inside the class)
        known = self._callers.get((path, qualname))
        if known is not None:  # the sources never change: each question is answered once
            return list(known)
        out = []
        first, _, last = qualname.rpartition(".")
        # an inherited method is called on instances of subclasses, which need not name its class,
        # but a call of a method names the method
        words = {qualname.split(".", 1)[0]} | ({last} if first and last not in CALL_METHODS else set())
        # ... and a call of a method or a nested function that Python does not call implicitly spells
        # its name (`obj.save(...)`, `self.save(...)`, `inner(...)`): the other files are not parsed
        required = last.encode() if first and last not in CALL_METHODS else None
        seen: set[str] = set()
        for word in sorted(words):
            for f in self.files.naming(word.encode(), required):
                if f.path in seen:
                    continue
                seen.add(f.path)
                for call, target in self._file_calls(f):
                    if target == (path, qualname):
                        out.append((f, call))
        self._callers[(path, qualname)] = out
        return list(out)

    def _file_calls(self, f: PyFile) -> list[tuple[ast.Call, tuple[str, str] | None]]:
        if self._calls is None:
            self._calls = {}
        cached = self._calls.get(f.path)
        if cached is None:
            cached = [(node, self._callee(f, node)) for node in f.walk() if isinstance(node, ast.Call)]
            self._calls[f.path] = cached
        return cached

    def callee(self, f: PyFile, call: ast.Call) -> tuple[str, str] | None:
        """(path, qualname) of the function, method or class of the run that ``call`` calls, if any."""
        for node, target in self._file_calls(f):
            if node is call:
                return target
        return self._callee(f, call)

    def _callee(self, f: PyFile, call: ast.Call) -> tuple[str, str] | None:
        func = call.func
        if isinstance(func, ast.Attribute) and isinstance(func.value, ast.Name):
            d = f.innermost_def(f.start(call))
            while d is not None and d.kind != "function":
                d = f.def_by_qualname.get(d.parent) if d.parent else None
            if d is not None and d.parent and d.node.args.args and d.node.args.args[0].arg == func.value.id:
                cls = f.def_by_qualname.get(d.parent)
                if cls is not None and cls.kind == "class":
                    method = self.method_of(f, cls, func.attr)
                    if method is not None:
                        return method[0].path, method[1].qualname
        found = self.names.def_of(f, func)
        if found is None and isinstance(func, ast.Name):
            # calling an instance: `server(x)` runs `Server.__call__` (`forward` for a module)
            cls = self.assigned_class(f, func)
            if cls is not None:
                for method in ("__call__", "forward"):
                    d = cls[0].def_by_qualname.get(f"{cls[1].qualname}.{method}")
                    if d is not None:
                        return cls[0].path, d.qualname
            return None
        if found is None and isinstance(func, ast.Attribute) and isinstance(func.value, ast.Name):
            # a method of an instance of a class of the run: `predictor = Predictor(d); predictor.predict(x)`
            # (the receiver followed through assignments only: the call index must not need itself)
            cls = self.assigned_class(f, func.value)
            if cls is not None:
                method = self.method_of(cls[0], cls[1], func.attr)
                if method is not None:
                    return method[0].path, method[1].qualname
            return None
        return (found[0].path, found[1].qualname) if found else None

    def method_of(self, f: PyFile, cls: Def, name: str, depth: int = 0) -> tuple[PyFile, Def] | None:
        """The method ``name`` an instance of ``cls`` runs: its own, else the first its bases in the
        run define (left to right, depth first: Python's order where no base is shared)."""
        own = f.def_by_qualname.get(f"{cls.qualname}.{name}")
        if own is not None:
            return f, own
        if depth > MAX_DEPTH:
            return None
        for base in cls.node.bases:
            found = self.names.def_of(f, base)
            if found is not None and found[1].kind == "class":
                inherited = self.method_of(found[0], found[1], name, depth + 1)
                if inherited is not None:
                    return inherited
        return None

    def assigned_class(self, f: PyFile, name: ast.Name, depth: int = 0) -> tuple[PyFile, Def] | None:
        """The class of the run whose instance a name is bound to by its assignments, if one."""
        found = f.scope_at(name).lookup(name.id)
        if found is None or depth > 4:
            return None
        _, binding = found
        if binding.param_of is not None or binding.imports or binding.defs or len(binding.values) != 1:
            return None
        value = without_self_methods(binding.values[0])
        if isinstance(value, ast.Name):
            return self.assigned_class(f, value, depth + 1)
        if not isinstance(value, ast.Call):
            return None
        target = self.names.def_of(f, value.func)
        return target if target is not None and target[1].kind == "class" else None


def without_self_methods(value: ast.AST | None, until: ast.AST | None = None) -> ast.AST | None:
    """``value`` without the module methods that return the module itself (``.eval()``, ``.to(d)``),
    unwrapped no further than ``until``."""
    while isinstance(value, ast.Call) and isinstance(value.func, ast.Attribute) and value.func.attr in SELF_METHODS \
            and value is not until:
        value = value.func.value
    return value
