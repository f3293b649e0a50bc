"""What a name in a file refers to in the run: a dotted name (imports followed), and the
definition of the run it names (through re-exports and star imports), if any."""

from __future__ import annotations

import ast
import builtins

from ts2export.model.files import Files
from ts2export.model.memo import MAX_DEPTH
from ts2export.model.pyfile import Def, PyFile, dotted


class Names:
    def __init__(self, files: Files) -> None:
        self.files = files
        self._defs_found: dict[tuple, tuple[PyFile, Def] | None] = {}  # (name, near, depth) -> lookup_def's answer
        self._library: dict[tuple[str, str | None], str] = {}  # (name, near) -> library_name's answer

    def qualified(self, f: PyFile, node: ast.AST) -> str | None:
        """The dotted name an expression refers to (imports followed; module-level definitions of
        the file as ``module.qualname``), or None."""
        parts = dotted(node)
        if not parts:
            return None
        found = f.scope_at(node).lookup(parts[0])
        if found is None:
            return ".".join(["builtins", *parts]) if hasattr(builtins, parts[0]) else None
        scope, binding = found
        if _imports_one(binding):
            return self.library_name(".".join([binding.imports[0], *parts[1:]]), f.path)
        if binding.defs and not binding.imports and len(set(binding.defs)) == 1 and all(
                _rewraps(v, parts[0]) for v in binding.values):
            # (also `X = torch.jit.script(X)` after `class X`: the name still holds that definition, wrapped)
            # (one name defined again: `@torch.jit._overload` stubs and their implementation)
            return ".".join([f"{f.module}.{binding.defs[0]}" if f.module else binding.defs[0], *parts[1:]])
        return None

    def library_name(self, name: str, near: str | None = None) -> str:
        """``name`` with a module of the run that re-exports a library's name replaced by that name:
        ``pkg.compat.torch.jit.script`` is ``torch.jit.script`` where ``pkg/compat.py`` binds
        ``torch`` by ``import torch`` alone (or with ``torch = None`` where the import fails, the
        optional-dependency idiom); the name itself where it leads into no such module."""
        key = (name, near)
        found = self._library.get(key)
        if found is None:
            followed = self._follow_reexport(name, near, 0)
            # a definition of the run keeps the name it is imported by (lookup_def follows it)
            found = self._library[key] = followed if followed != name and not self.in_run(followed, near) else name
        return found

    def _follow_reexport(self, name: str, near: str | None, depth: int) -> str:
        parts = name.split(".")
        for cut in range(len(parts) - 1, 0, -1):
            f = self.files.module_file(".".join(parts[:cut]), near)
            if f is None:
                continue
            binding = f.module_scope.names.get(parts[cut])
            if binding is None or not _imports_one(binding) or depth >= MAX_DEPTH:
                return name
            target = ".".join([binding.imports[0], *parts[cut + 1:]])
            if not self.in_run(target, f.path):
                return target
            further = self._follow_reexport(target, f.path, depth + 1)
            return further if further != target else name
        return name

    def lookup_def(self, name: str, near: str | None = None, depth: int = 0) -> tuple[PyFile, Def] | None:
        """The definition in the run that a dotted name names (through re-exports), if any."""
        if depth > MAX_DEPTH or not name:
            return None
        key = (name, near, depth)  # star imports branch, and may import each other
        if key not in self._defs_found:
            self._defs_found[key] = self._find_def(name, near, depth)
        return self._defs_found[key]

    def _find_def(self, name: str, near: str | None, depth: int) -> tuple[PyFile, Def] | None:
        parts = name.split(".")
        for cut in range(len(parts), 0, -1):
            f = self.files.module_file(".".join(parts[:cut]), near)
            if f is None:
                continue
            rest = parts[cut:]
            if not rest:
                # a module, not a definition; unless its package binds the same name to one
                # (`from .matmul import matmul` in `sparse/__init__.py`: `sparse.matmul` is the
                # function, as Python's attribute of the package is)
                return self._package_binding(parts, near, depth)
            d = f.def_by_qualname.get(".".join(rest))
            if d is not None:
                return f, d
            for i in range(len(rest), 0, -1):  # a definition, then attributes of it
                d = f.def_by_qualname.get(".".join(rest[:i]))
                if d is not None:
                    return (f, d) if i == len(rest) else None
            binding = f.module_scope.names.get(rest[0])
            if binding is not None and binding.imports:
                return self.lookup_def(".".join([binding.imports[0], *rest[1:]]), f.path, depth + 1)
            for star in f.star_imports:
                found = self.lookup_def(".".join([star, *rest]), f.path, depth + 1)
                if found is not None:
                    return found
            return None
        return None

    def _package_binding(self, parts: list[str], near: str | None, depth: int) -> tuple[PyFile, Def] | None:
        """The definition that a package binds under the name of one of its submodules, if any."""
        if len(parts) < 2:
            return None
        package = self.files.module_file(".".join(parts[:-1]), near)
        if package is None:
            return None
        d = package.def_by_qualname.get(parts[-1])
        if d is not None:
            return package, d
        binding = package.module_scope.names.get(parts[-1])
        name = ".".join(parts)
        if binding is None or not _imports_one(binding) or binding.imports[0] == name:
            return None
        return self.lookup_def(binding.imports[0], package.path, depth + 1)

    def lookup_global(self, name: str, near: str | None = None, depth: int = 0) -> tuple[PyFile, ast.AST] | None:
        """The value of a module-level name of the run that a dotted name names (``config.DIM``),
        through re-exports, when the module binds it exactly once by a plain assignment; else None."""
        if depth > MAX_DEPTH or not name:
            return None
        parts = name.split(".")
        for cut in range(len(parts) - 1, 0, -1):
            f = self.files.module_file(".".join(parts[:cut]), near)
            if f is None:
                continue
            rest = parts[cut:]
            if len(rest) != 1:
                return None
            binding = f.module_scope.names.get(rest[0])
            if binding is None:
                return None
            if binding.imports and not binding.values and not binding.defs and len(set(binding.imports)) == 1:
                return self.lookup_global(binding.imports[0], f.path, depth + 1)
            value = binding.single_value
            return (f, value) if value is not None else None
        return None

    def in_run(self, name: str, near: str | None = None) -> bool:
        """Whether a dotted name lies in a module of this run (else it is a library's), as
        :meth:`lookup_def` finds modules from the file ``near``."""
        parts = name.split(".")
        return any(self.files.module_paths(".".join(parts[:cut]), near) for cut in range(len(parts), 0, -1))

    def def_of(self, f: PyFile, node: ast.AST) -> tuple[PyFile, Def] | None:
        name = self.qualified(f, node)
        return self.lookup_def(name, f.path) if name else None


def _rewraps(value: ast.AST, name: str) -> bool:
    """``wrapper(name)``: a value that wraps the definition bound to ``name`` (``torch.jit.script(X)``)."""
    return (isinstance(value, ast.Call) and len(value.args) == 1 and not value.keywords
            and isinstance(value.args[0], ast.Name) and value.args[0].id == name)


def _imports_one(binding) -> bool:
    """Whether a name is bound by imports of one target only: no definition, and no value but
    ``None`` (``try: import torch`` / ``except ImportError: torch = None``)."""
    return (bool(binding.imports) and not binding.defs and len(set(binding.imports)) == 1 and binding.param_of is None
            and not binding.loops and all(isinstance(v, ast.Constant) and v.value is None for v in binding.values))
