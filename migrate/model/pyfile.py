"""A cheap index of one Python file, built with the standard library's ``ast`` (no libcst).

The program model (:mod:`ts2export.model`) is built from these indexes, once per run, over every
file of the run: what each module is called, what its names refer to (imports, definitions,
assignments), where its definitions start and end, and how to read an expression back as a
dotted name. ``ast`` parses a file about ten times faster than libcst with metadata, and the index
keeps only what cross-file questions need.

Positions are those of findings: 1-based lines, 0-based columns counted in characters (``ast``
counts bytes; :meth:`PyFile.char_col` converts), ends exclusive.
"""

from __future__ import annotations

import ast
import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import Iterator

from ts2export.quoting import inline

Pos = tuple[int, int]  # (line, column), 1-based line, 0-based character column

_DEFINITIONS = (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)
#: The nodes _bind_statement reads: every other node binds no name.
_BINDING = (ast.Assign, ast.AnnAssign, ast.AugAssign, ast.NamedExpr, ast.For, ast.AsyncFor, ast.comprehension,
            ast.withitem, ast.ExceptHandler, ast.Import, ast.ImportFrom, ast.Global, ast.Nonlocal)


@dataclass
class Def:
    """A class or function definition (methods and nested definitions included)."""

    qualname: str  # "Gate", "Gate.forward", "build.inner"
    kind: str  # "class" or "function"
    node: ast.AST
    start: Pos  # first decorator, or the `def`/`class` keyword
    end: Pos
    parent: str | None  # qualname of the enclosing definition

    def contains(self, pos: Pos) -> bool:
        return self.start <= pos < self.end


@dataclass
class Binding:
    """What a name is bound to in one scope: every binding statement's value (None: not an
    assignment of a value, e.g. a loop target or a parameter)."""

    values: list[ast.AST | None] = field(default_factory=list)
    imports: list[str] = field(default_factory=list)  # dotted targets of imports binding the name
    defs: list[str] = field(default_factory=list)  # qualnames of definitions binding the name
    param_of: str | None = None  # qualname of the function whose parameter it is
    loops: list[tuple] = field(default_factory=list)  # (iterable, index in a tuple target or None) of `for` loops binding it

    @property
    def single_value(self) -> ast.AST | None:
        """The value when the name is bound exactly once, by a plain assignment."""
        if len(self.values) == 1 and not self.imports and not self.defs and self.param_of is None and not self.loops:
            return self.values[0]
        return None


class Scope:
    """The names bound in a module body or in one function (comprehension and lambda scopes are
    folded into their function: a conservative view that only makes more names ambiguous)."""

    def __init__(self, qualname: str, node: ast.AST, parent: "Scope | None") -> None:
        self.qualname = qualname
        self.node = node
        self.parent = parent
        self.names: dict[str, Binding] = {}

    def bind(self, name: str) -> Binding:
        return self.names.setdefault(name, Binding())

    def lookup(self, name: str) -> tuple["Scope", Binding] | None:
        """The innermost function scope, else the module scope, that binds ``name`` (class bodies
        are skipped, as Python does for names used in methods)."""
        scope: Scope | None = self
        while scope is not None:
            if name in scope.names:
                return scope, scope.names[name]
            scope = scope.parent
        return None


#: How many folders without an ``__init__.py``, one inside the other, a package may hold as
#: namespace portions of it (see :func:`module_name`).
NAMESPACE_DEPTH = 2


def module_name(path: str, has_init=None) -> str:
    """The dotted module name Python gives ``path``: its folders up to the topmost one holding an
    ``__init__.py``, through up to :data:`NAMESPACE_DEPTH` folders without one between packages
    (a script outside any package is named by its stem). ``has_init(folder)``
    says whether a folder holds one (default: look on disk). The climb is over the absolute path, so
    that the name does not depend on the current folder (``check .`` inside a package's folder
    names its modules as ``check /abs/path/to/package`` does)."""
    if has_init is None:
        def has_init(folder: str) -> bool:
            return os.path.isfile(os.path.join(folder, "__init__.py"))
    path = os.path.abspath(path)
    stem = os.path.splitext(os.path.basename(path))[0]
    parts = [] if stem == "__init__" else [stem]
    folder = os.path.dirname(path)
    bridged: list[str] = []  # folders without one, kept while a package above may hold them
    while folder not in ("", os.sep):
        if has_init(folder):
            parts[:0] = [os.path.basename(folder), *bridged]
            bridged = []
        elif len(bridged) < NAMESPACE_DEPTH:
            # a folder without __init__.py inside a package is a namespace portion of it: Python
            # imports `pkg/ops/linear.py` (no pkg/ops/__init__.py) as `pkg.ops.linear`; kept only
            # if a folder above it holds one
            bridged.insert(0, os.path.basename(folder))
        else:
            break
        parent = os.path.dirname(folder)
        if parent == folder:
            break
        folder = parent
    return ".".join(parts)


def dotted(node: ast.AST) -> list[str] | None:
    """``a.b.c`` as ["a", "b", "c"]; None for anything else."""
    parts: list[str] = []
    while isinstance(node, ast.Attribute):
        parts.insert(0, node.attr)
        node = node.value
    if isinstance(node, ast.Name):
        parts.insert(0, node.id)
        return parts
    return None


class PyFile:
    """One parsed file: its tree, scopes, definitions, and name resolution."""

    def __init__(self, path: str, source: bytes, module: str | None = None) -> None:
        self.path = path
        self.module = module if module is not None else module_name(path)
        self.source = source
        self.cells: tuple = ()  # a notebook's module: (first line of a cell, cell number), see where()
        self.tree = ast.parse(source, filename=path)
        self._nodes: list[ast.AST] | None = None  # see walk()
        self._lines = source.splitlines()
        self.defs: list[Def] = []
        self.def_by_qualname: dict[str, Def] = {}
        self.scopes: dict[int, Scope] = {}  # id(function or module node) -> scope
        self.scope_of_node: dict[int, Scope] = {}  # id(any node) -> the scope it is evaluated in
        self.star_imports: list[str] = []
        self.module_scope = Scope("", self.tree, None)
        self.scopes[id(self.tree)] = self.module_scope
        self._collect(self.tree, self.module_scope, "", None)

    # -- positions ---------------------------------------------------------------------------
    def where(self, line: int) -> str:
        """``path:line``; in a notebook's module ``path:cell N:line`` (the line within the cell)."""
        cell, first = 0, 1
        for start, number in self.cells:
            if start > line:
                break
            cell, first = number, start
        return f"{self.path}:cell {cell}:{line - first + 1}" if cell else f"{self.path}:{line}"

    def char_col(self, line: int, byte_col: int) -> int:
        if not 0 < line <= len(self._lines):
            return byte_col
        raw = self._lines[line - 1]
        if raw.isascii():
            return byte_col
        return len(raw[:byte_col].decode("utf-8", errors="replace"))

    def start(self, node: ast.AST) -> Pos:
        return node.lineno, self.char_col(node.lineno, node.col_offset)

    def end(self, node: ast.AST) -> Pos:
        return node.end_lineno, self.char_col(node.end_lineno, node.end_col_offset)

    def segment(self, node: ast.AST) -> str:
        """The whole source text of a node."""
        lines = self._lines[node.lineno - 1:node.end_lineno]
        if not lines:
            return ""
        if len(lines) == 1:
            return lines[0][node.col_offset:node.end_col_offset].decode("utf-8", errors="replace")
        lines = [lines[0][node.col_offset:], *lines[1:-1], lines[-1][:node.end_col_offset]]
        return b"\n".join(lines).decode("utf-8", errors="replace")

    def text(self, node: ast.AST) -> str:
        """The source text of a node; a node over several lines as messages quote it (one line,
        without its comments, short: ts2export.quoting)."""
        lines = self._lines[node.lineno - 1:node.end_lineno]
        if not lines:
            return ""
        if len(lines) == 1:
            return lines[0][node.col_offset:node.end_col_offset].decode("utf-8", errors="replace")
        text = b"\n".join([lines[0][node.col_offset:], *lines[1:-1], lines[-1][:node.end_col_offset]])
        return inline(text.decode("utf-8", errors="replace"))

    # -- collection --------------------------------------------------------------------------
    def _collect(self, node: ast.AST, scope: Scope, prefix: str, parent: str | None) -> None:
        # the hottest loop of the program model (every node of every parsed file): the children
        # are listed inline (as ast.iter_child_nodes does, in the same order) and only the node
        # types that can bind a name go through _bind_statement
        scope_of_node = self.scope_of_node
        for name in node._fields:
            value = getattr(node, name, None)
            if isinstance(value, ast.AST):
                children = (value,)
            elif isinstance(value, list):
                children = value
            else:
                continue
            for child in children:
                if not isinstance(child, ast.AST):
                    continue
                scope_of_node[id(child)] = scope
                if isinstance(child, _DEFINITIONS):
                    self._definition(child, scope, scope, prefix, parent)
                    continue
                if isinstance(child, ast.Lambda):
                    self._bind_args(child.args, scope, None)
                if isinstance(child, _BINDING):
                    self._bind_statement(child, scope)
                if child._fields:
                    self._collect(child, scope, prefix, parent)

    def _definition(self, node, scope: Scope, outer: Scope, prefix: str, parent: str | None) -> None:
        """``scope`` binds the name (a class body for a method); ``outer`` is where the body's free
        names resolve (Python skips class bodies there)."""
        qualname = f"{prefix}{node.name}"
        first = node.decorator_list[0] if node.decorator_list else node
        start = self.start(first)
        if node.decorator_list:  # the decorator's `@` sits one column before its expression
            start = (start[0], max(0, start[1] - 1))
        d = Def(qualname, "class" if isinstance(node, ast.ClassDef) else "function", node, start, self.end(node), parent)
        self.defs.append(d)
        self.def_by_qualname.setdefault(qualname, d)
        scope.bind(node.name).defs.append(qualname)
        # decorators, bases, defaults and annotations are evaluated in the enclosing scope
        for expr in [*node.decorator_list, *getattr(node, "bases", []), *[k.value for k in getattr(node, "keywords", [])]]:
            self.scope_of_node[id(expr)] = scope
            self._collect_expr(expr, scope)
        if isinstance(node, ast.ClassDef):
            # A class body is its own namespace, but its methods see the enclosing scope.
            body_scope = Scope(qualname, node, scope)
            self.scopes[id(node)] = body_scope
            for stmt in node.body:
                self.scope_of_node[id(stmt)] = body_scope
                if isinstance(stmt, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
                    self._definition(stmt, body_scope, outer, qualname + ".", qualname)
                else:
                    self._bind_statement(stmt, body_scope)
                    self._collect(stmt, body_scope, qualname + ".", qualname)
            return
        for default in [*node.args.defaults, *[d for d in node.args.kw_defaults if d is not None]]:
            self.scope_of_node[id(default)] = scope
            self._collect_expr(default, scope)
        fn_scope = Scope(qualname, node, outer)
        self.scopes[id(node)] = fn_scope
        self._bind_args(node.args, fn_scope, qualname)
        for stmt in node.body:
            self.scope_of_node[id(stmt)] = fn_scope
            if isinstance(stmt, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
                self._definition(stmt, fn_scope, fn_scope, qualname + ".", qualname)
                continue
            self._bind_statement(stmt, fn_scope)
            self._collect(stmt, fn_scope, qualname + ".", qualname)

    def _collect_expr(self, expr: ast.AST, scope: Scope) -> None:
        for child in ast.walk(expr):
            self.scope_of_node.setdefault(id(child), scope)

    def _bind_args(self, args: ast.arguments, scope: Scope, owner: str | None) -> None:
        for a in [*args.posonlyargs, *args.args, *args.kwonlyargs, args.vararg, args.kwarg]:
            if a is not None:
                b = scope.bind(a.arg)
                b.param_of = owner or scope.qualname

    def _bind_target(self, target: ast.AST, scope: Scope, value: ast.AST | None) -> None:
        if isinstance(target, ast.Name):
            scope.bind(target.id).values.append(value)
        elif isinstance(target, (ast.Tuple, ast.List)):
            values = value.elts if isinstance(value, (ast.Tuple, ast.List)) else None
            if values is not None and (len(values) != len(target.elts)
                                       or any(isinstance(e, ast.Starred) for e in [*values, *target.elts])):
                values = None
            for i, elt in enumerate(target.elts):  # `q, r = torch.rand(4, 3), torch.rand(10, 3)`: item by item
                self._bind_target(elt, scope, values[i] if values is not None else None)
        elif isinstance(target, ast.Starred):
            self._bind_target(target.value, scope, None)

    def _bind_statement(self, node: ast.AST, scope: Scope) -> None:
        if isinstance(node, ast.Assign):
            for t in node.targets:
                self._bind_target(t, scope, node.value if len(node.targets) == 1 else None)
        elif isinstance(node, ast.AnnAssign):
            self._bind_target(node.target, scope, node.value)
        elif isinstance(node, ast.AugAssign):
            self._bind_target(node.target, scope, None)
            self._bind_target(node.target, scope, None)  # a second binding: never "bound once"
        elif isinstance(node, ast.NamedExpr):
            self._bind_target(node.target, scope, node.value)
        elif isinstance(node, (ast.For, ast.AsyncFor, ast.comprehension)):
            target = node.target
            if isinstance(target, ast.Name):
                scope.bind(target.id).loops.append((node.iter, None))
            elif isinstance(target, ast.Tuple) and all(isinstance(e, ast.Name) for e in target.elts):
                for i, elt in enumerate(target.elts):  # `for a, b in ((1, 2), (3, 4))`
                    scope.bind(elt.id).loops.append((node.iter, i))
            else:
                self._bind_target(target, scope, None)
        elif isinstance(node, ast.withitem) and node.optional_vars is not None:
            self._bind_target(node.optional_vars, scope, None)
        elif isinstance(node, ast.ExceptHandler) and node.name:
            scope.bind(node.name).values.append(None)
        elif isinstance(node, ast.Import):
            for alias in node.names:
                if alias.asname:
                    scope.bind(alias.asname).imports.append(alias.name)
                else:
                    top = alias.name.split(".")[0]
                    scope.bind(top).imports.append(top)
        elif isinstance(node, ast.ImportFrom):
            base = self.import_base(node)
            for alias in node.names:
                if alias.name == "*":
                    if base:
                        self.star_imports.append(base)
                    continue
                scope.bind(alias.asname or alias.name).imports.append(f"{base}.{alias.name}" if base else alias.name)
        elif isinstance(node, (ast.Global, ast.Nonlocal)):
            for name in node.names:
                scope.bind(name).values.append(None)

    def import_base(self, node: ast.ImportFrom) -> str:
        if not node.level:
            return node.module or ""
        package = self.module.split(".")
        if Path(self.path).stem != "__init__":
            package = package[:-1]
        if node.level > 1:
            package = package[: len(package) - (node.level - 1)] if node.level - 1 <= len(package) else []
        return ".".join([*package, *([node.module] if node.module else [])])

    # -- queries -----------------------------------------------------------------------------
    def scope_at(self, node: ast.AST) -> Scope:
        return self.scope_of_node.get(id(node), self.module_scope)

    def innermost_def(self, pos: Pos) -> Def | None:
        found = None
        for d in self.defs:
            if d.contains(pos) and (found is None or d.start >= found.start):
                found = d
        return found

    def enclosing_defs(self, pos: Pos) -> list[Def]:
        """Every definition containing ``pos``, innermost first."""
        return sorted((d for d in self.defs if d.contains(pos)), key=lambda d: d.start, reverse=True)

    def walk(self) -> Iterator[ast.AST]:
        """Every node of the file, in ``ast.walk``'s order: walked once, then read from a list
        (the sites, the script uses, the calls and the views each go over the files with `jit`)."""
        if self._nodes is None:
            self._nodes = list(ast.walk(self.tree))
        return iter(self._nodes)


def returns_of(fn: ast.AST) -> list[ast.Return]:
    """The return statements of a function, not those of the functions and classes it defines
    (found once per function: the program model asks again for the same functions)."""
    known = getattr(fn, "_ts2export_returns", None)
    if known is not None:
        return list(known)
    out: list[ast.Return] = []
    todo = list(ast.iter_child_nodes(fn))
    while todo:
        node = todo.pop()
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef, ast.Lambda)):
            continue
        if isinstance(node, ast.Return):
            out.append(node)
        todo.extend(ast.iter_child_nodes(node))
    fn._ts2export_returns = tuple(out)  # type: ignore[attr-defined]
    return out


def first_arg(call: ast.AST, *keywords: str) -> ast.AST | None:
    """A call's first argument: the keyword among ``keywords`` if given so, else the first positional."""
    if not isinstance(call, ast.Call):
        return None
    for k in call.keywords:
        if k.arg in keywords:
            return k.value
    return call.args[0] if call.args and not isinstance(call.args[0], ast.Starred) else None
