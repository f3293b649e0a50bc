"""What an object given to ``torch.jit.script``/``trace`` is: a module instance, a function, a class,
or something that cannot be told (every value it may have must agree)."""

from __future__ import annotations

import ast

from ts2export.model.memo import MAX_DEPTH, PathMemo
from ts2export.model.names import Names
from ts2export.model.origins import Origins
from ts2export.model.pyfile import PyFile, first_arg, returns_of
from ts2export.model.torchapi import PASS_THROUGH, SCRIPT, SELF_METHODS, TRACE, TRACE_MODULE
from ts2export.model.values import UNKNOWN, Env, Values


class Kinds:
    def __init__(self, names: Names, values: Values, origins: Origins) -> None:
        self.names = names
        self.values = values
        self.origins = origins
        self._kinds = PathMemo("")  # object_kind's answers (they cut cycles with the path: see ts2export.model.memo)

    def object_kind(self, f: PyFile, node: ast.AST, seen: frozenset = frozenset(), env: "Env | None" = None) -> str:
        """Whether what ``node`` evaluates to is a module instance, a function, a class, or
        cannot be told: every value it may have must agree (values met again add nothing)."""
        if len(seen) > MAX_DEPTH:
            return ""
        key = (id(node), len(seen), id(env) if env is not None else None)
        return self._kinds.ask(key, id(node), seen, lambda: self._find_kind(f, node, seen | {id(node)}, env))

    def _find_kind(self, f: PyFile, node: ast.AST, seen: frozenset, env: "Env | None") -> str:
        if self.origins.self_classes(f, node) is not None:
            return "module"  # `self` in a method: an instance (of the class or of a subclass)
        kinds: set[str] = set()
        for alt in self.values.values(f, node, env=env):
            kinds.add(self._kind_of_value(alt, seen))
        kinds.discard("")
        if not kinds:
            return ""
        return kinds.pop() if len(kinds) == 1 else "unknown"

    def _kind_of_value(self, alt, seen: frozenset) -> str:
        if alt is UNKNOWN:
            return "unknown"
        if alt[0] == "def":
            return "function" if alt[2].kind == "function" else "class"
        if alt[0] == "annotated":  # a parameter nothing calls: its annotation says what it is
            name = self.names.qualified(alt[1], alt[2]) or ""
            if name.endswith(".Module") or name.startswith("torch.nn."):
                return "module"
            found = self.names.lookup_def(name, alt[1].path) if name else None
            if found is not None and found[1].kind == "class":
                return "module"
            if name.rsplit(".", 1)[-1] == "Callable":
                return "function"
            return "unknown"
        vf, expr = alt
        if isinstance(expr, ast.Lambda):
            return "function"
        if isinstance(expr, ast.Call):
            name = self.names.qualified(vf, expr.func) or ""
            if name in ("functools.partial", "builtins.getattr"):
                return "unknown"
            if name in (SCRIPT, TRACE, TRACE_MODULE) or name in PASS_THROUGH:
                inner = first_arg(expr, "obj", "func", "mod", "script_module")
                return self.object_kind(vf, inner, seen) if inner is not None else "unknown"
            found = self.names.lookup_def(name, vf.path) if name else None
            if found is not None and found[1].kind == "function":
                returns = [r.value for r in returns_of(found[1].node) if r.value is not None]
                env = self.origins.call_env(vf, expr, found[0], found[1])
                kinds = {self.object_kind(found[0], r, seen, env) for r in returns}
                if returns and kinds == {""}:
                    return ""  # each return leads back to a value being followed (`model = fuse(model)`)
                kinds.discard("")
                return kinds.pop() if len(kinds) == 1 else "unknown"
            if isinstance(expr.func, ast.Attribute) and expr.func.attr in SELF_METHODS:
                return self.object_kind(vf, expr.func.value, seen)
            return "module"  # an instance made by a constructor or a factory
        if isinstance(expr, (ast.Name, ast.Attribute)):
            name = self.names.qualified(vf, expr)
            found = self.names.lookup_def(name, vf.path) if name else None
            if found is not None:
                return "function" if found[1].kind == "function" else "class"
            if name and not self.names.in_run(name, vf.path) and not name.startswith("builtins."):
                last = name.rsplit(".", 1)[-1]
                return "class" if last[:1].isupper() else "function"
            if isinstance(expr, ast.Attribute) and name is None:
                return self._member_kind(vf, expr, seen)
            return "unknown"
        return "unknown"

    def _member_kind(self, f: PyFile, expr: ast.Attribute, seen: frozenset) -> str:
        """``obj.attr`` where ``obj`` is an instance of a class of the run: a method (a function
        bound to it) or what the class assigns to ``self.attr`` (a submodule, say)."""
        kinds: set[str] = set()
        for origin in self.origins.origins(f, expr.value):
            if not (isinstance(origin, tuple) and origin[0] == "instance"):
                return "unknown"
            cf, cls = origin[1], origin[2]
            if cf.def_by_qualname.get(f"{cls.qualname}.{expr.attr}") is not None:
                kinds.add("function")
                continue
            stores = [sub.value for sub in ast.walk(cls.node) if isinstance(sub, ast.Assign) and len(sub.targets) == 1
                      and isinstance(sub.targets[0], ast.Attribute) and sub.targets[0].attr == expr.attr
                      and isinstance(sub.targets[0].value, ast.Name) and sub.targets[0].value.id == "self"]
            if not stores:
                return "unknown"
            kinds |= {self.object_kind(cf, v, seen) for v in stores}
        kinds.discard("")
        return kinds.pop() if len(kinds) == 1 else "unknown"
