"""Module-level constants and literal containers of the run, as sizes are read from them: a name
bound once (``DIM = 6``), imported from another module or read as its attribute (``config.DIM``),
and the items of a literal dict, list or tuple bound once (``CFG["dim"]``), unless code that may
change the item is in sight."""

from __future__ import annotations

import ast

from ts2export.model.names import Names
from ts2export.model.pyfile import PyFile


class Literals:
    def __init__(self, names: Names) -> None:
        self.names = names
        self._changes: dict[str, list] = {}  # path -> the subscript stores and dict updates of the file

    def global_value(self, f: PyFile, node: ast.AST) -> tuple[PyFile, ast.AST] | None:
        """The value of a module-level name of another module of the run (imported, or read as a
        module's attribute), bound there once."""
        name = self.names.qualified(f, node)
        return self.names.lookup_global(name, f.path) if name else None

    def literal(self, f: PyFile, node: ast.AST, names: set[str]) -> tuple[PyFile, ast.AST] | None:
        """The one literal (dict, list, tuple) an expression names: a name bound once, in this
        module or imported from another of the run, or a module's attribute. ``names``: gets the
        names it is known by on the way."""
        for _ in range(4):
            if isinstance(node, (ast.Dict, ast.List, ast.Tuple)):
                return f, node
            names.add(node.attr if isinstance(node, ast.Attribute) else getattr(node, "id", ""))
            if isinstance(node, ast.Name):
                found = f.scope_at(node).lookup(node.id)
                if found is None:
                    return None
                binding = found[1]
                value = binding.single_value
                if value is not None:
                    node = value
                    continue
            if not isinstance(node, (ast.Name, ast.Attribute)):
                return None
            found = self.global_value(f, node)
            if found is None:
                return None
            f, node = found
        return None

    def key_changed(self, f: PyFile, key: object, names: set[str]) -> bool:
        """Whether code of the file may store or delete ``key`` in the literal (known here by
        ``names``): a subscript store of that key on anything, or one of a key it cannot tell (or
        ``.update``, ``.setdefault``, ``.pop``) on one of ``names``, a parameter, or an attribute.
        A local bound to something else (``outputs[name] = y``) is not the literal."""
        changes = self._changes.get(f.path)
        if changes is None:
            changes = []
            for sub in f.walk():
                if isinstance(sub, ast.Subscript) and not isinstance(sub.ctx, ast.Load):
                    base, k = sub.value, sub.slice.value if isinstance(sub.slice, ast.Constant) else ...
                elif isinstance(sub, ast.Call) and isinstance(sub.func, ast.Attribute) \
                        and sub.func.attr in ("update", "setdefault", "pop", "__setitem__"):
                    base, k = sub.func.value, ...
                else:
                    continue
                if isinstance(base, ast.Name):
                    found = f.scope_at(base).lookup(base.id)
                    who = base.id if found is None or found[1].param_of is None else "*"
                else:
                    who = "*"
                changes.append((who, k))
            self._changes[f.path] = changes
        return any(k == key or k is ... and (who == "*" or who in names) for who, k in changes)
