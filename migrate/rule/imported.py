"""Qualified names of imported names, as libcst's scope analysis gives them, read from the file's
import statements alone.

Most questions the rules ask about names are about names a file imports once, at the top, and
never binds otherwise (``nn.Module`` in ``class Net(nn.Module)``, ``torch.jit.script``). For those,
libcst's answer (:meth:`libcst.metadata.Scope.get_qualified_names_for`) depends only on the import
statements that bind the name, and this module computes it from Python's own parser: a file whose
questions are all of that kind is never given to libcst's scope analysis, a full walk of the tree in
Python (a third of a cold run over a package of models, see docs/speed.md).

It answers only where the answer cannot differ from libcst's, and says "don't know" (None) otherwise:

* the name's first part is bound by imports at module level only: no assignment, parameter,
  definition, ``del``, ``global``/``nonlocal``, loop, ``with``, ``except`` or ``match`` target of
  that name anywhere in the file, no import of it inside a function or class, and no ``*`` import in
  the file;
* a bare name (``script``, not ``torch.jit.script``) only where every import of it is among the
  file's leading imports, or where the node is in a function's or a class's body, or in a
  statement of the module after the last one that imports it (at module level libcst counts only
  the imports before the name), and only where no import binds a dotted name under it
  (``import a.b`` makes libcst name ``a`` after ``a.b`` in places);
* not a name inside an import statement.

A name bound nowhere in the file is a builtin (``builtins.len``) or nothing, as libcst has it.

tests/test_fast_path.py checks, over the corpus and real files, that every answer equals libcst's.
"""

from __future__ import annotations

import ast
import builtins
from dataclasses import dataclass
from typing import Callable


@dataclass(frozen=True)
class _Import:
    """One import statement at module level: the module of a ``from`` import (with its leading
    dots) and its names with their ``as`` names."""

    module: str  # "" for `import a.b`
    names: tuple[tuple[str, str | None], ...]

    def qualnames(self, full_name: str) -> set[str]:
        """libcst's ImportAssignment.get_qualified_names_for(full_name), over all the statement's names."""
        out: set[str] = set()
        for real, alias in self.names:
            for name in _prefixes(real):
                as_name = alias if alias is not None else name
                if self.module.endswith("."):
                    name = f"{self.module}{name}"
                elif self.module:
                    name = f"{self.module}.{name}"
                if full_name.startswith(as_name):
                    rest = full_name.split(as_name, 1)[1]
                    if rest and not rest.startswith("."):
                        continue
                    rest = rest.lstrip(".")
                    out.add(f"{name}.{rest}" if rest else name)
                    break
        return out


@dataclass(frozen=True)
class ImportTable:
    """What the module-level imports bind (each name libcst records for them, dotted ones
    included), the first parts of names bound otherwise anywhere, and the dotted bindings."""

    bound: dict[str, tuple[_Import, ...]]  # name (possibly dotted) -> the statements that bind it
    otherwise: frozenset[str]  # first parts bound by anything but a module-level import
    dotted_heads: frozenset[str]  # first parts of dotted names a module-level `import a.b` binds
    late: frozenset[str]  # first parts an import binds after the file's leading imports
    star: bool  # a `from m import *` somewhere
    last_import: dict[str, int]  # first part -> the index in the module's body of the last statement importing it

    def qualnames(self, full_name: str | None, bare: bool, in_a_body: Callable[[], bool] = lambda: False,
                  statement: Callable[[], int | None] = lambda: None) -> set[str] | None:
        """libcst's qualified names of a node spelled ``full_name`` (``bare``: a Name node, else an
        Attribute; ``in_a_body()``: the node is known to be in a function's or class's body;
        ``statement()``: the index in ``ast``'s module body of the statement the node is in, None
        where unknown; both asked only for a bare name imported late), or None where they may
        differ (see the module's docstring). The caller leaves out import statements."""
        if full_name is None or self.star:
            return None
        head = full_name.split(".", 1)[0]
        if head in self.otherwise:
            return None
        if head not in self.bound:  # bound nowhere in the file: a builtin, or nothing libcst knows
            return next(({f"builtins.{p}"} for p in _prefixes(full_name) if hasattr(builtins, p)), set())
        if bare and head in self.dotted_heads:
            return None
        if bare and head in self.late and not in_a_body():
            index = statement()
            if index is None or index <= self.last_import[head]:
                return None
        # libcst looks the longest bound prefix up (`a.b` before `a`); the head is bound, so one is
        statements = next(self.bound[p] for p in _prefixes(full_name) if p in self.bound)
        return set().union(*(statement.qualnames(full_name) for statement in statements))


def _prefixes(name: str):
    """``a.b.c``, ``a.b``, ``a``: the dotted prefixes of a name, longest first."""
    parts = name.split(".")
    return (".".join(parts[:i]) for i in range(len(parts), 0, -1))


def import_table(tree: ast.Module) -> ImportTable:  # noqa: C901 - one walk, one table
    """The import table of a parsed module."""
    bound: dict[str, list[_Import]] = {}
    otherwise: set[str] = set()
    dotted: set[str] = set()
    star = False

    def bind_import(node: ast.Import | ast.ImportFrom, top: bool) -> None:
        nonlocal star
        if isinstance(node, ast.ImportFrom):
            module = "." * node.level + (node.module or "")
            names = tuple((a.name, a.asname) for a in node.names)
            if any(a.name == "*" for a in node.names):
                star = True
                return
            statement = _Import(module, names)
            bindings = [a.asname or a.name for a in node.names]
        else:
            statement = _Import("", tuple((a.name, a.asname) for a in node.names))
            bindings = []
            for a in node.names:
                if a.asname:
                    bindings.append(a.asname)
                else:  # libcst records `import a.b.c` as `a.b.c`, `a.b` and `a`
                    bindings.extend(_prefixes(a.name))
                    if "." in a.name:
                        dotted.add(a.name.split(".", 1)[0])
        for name in bindings:
            if top:
                bound.setdefault(name, []).append(statement)
            else:
                otherwise.add(name.split(".", 1)[0])

    def visit(node: ast.AST, top: bool) -> None:
        for child in ast.iter_child_nodes(node):
            if isinstance(child, (ast.Import, ast.ImportFrom)):
                bind_import(child, top)
                continue
            inner = top
            if isinstance(child, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
                otherwise.add(child.name)
                inner = False
            elif isinstance(child, ast.Lambda):
                inner = False
            elif isinstance(child, ast.Name) and not isinstance(child.ctx, ast.Load):
                otherwise.add(child.id)
            elif isinstance(child, ast.arg):
                otherwise.add(child.arg)
            elif isinstance(child, (ast.Global, ast.Nonlocal)):
                otherwise.update(child.names)
            elif isinstance(child, (ast.ExceptHandler, ast.MatchAs, ast.MatchStar)) and child.name:
                otherwise.add(child.name)
            elif isinstance(child, ast.MatchMapping) and child.rest:
                otherwise.add(child.rest)
            visit(child, inner)

    visit(tree, True)
    late: set[str] = set()  # bound by an import after the first statement that is neither an import nor a docstring
    last: dict[str, int] = {}
    header = True
    for i, statement in enumerate(tree.body):
        is_docstring = i == 0 and isinstance(statement, ast.Expr) and isinstance(statement.value, ast.Constant)
        if not isinstance(statement, (ast.Import, ast.ImportFrom)) and not is_docstring:
            header = False
        for node in [statement] if header else ast.walk(statement):
            if isinstance(node, (ast.Import, ast.ImportFrom)):
                heads = [(a.asname or a.name).split(".", 1)[0] for a in node.names]
                last.update(dict.fromkeys(heads, i))
                if not header:
                    late.update(heads)
    return ImportTable({k: tuple(v) for k, v in bound.items()}, frozenset(otherwise), frozenset(dotted),
                       frozenset(late), star, last)
