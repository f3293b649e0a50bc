"""What a rule may know about the file it checks: its path, text and options, the program model's
view of the other files, and what its import statements and assignments bind."""

from __future__ import annotations

import ast
import functools
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Mapping

from ts2export.model.view import ProgramView

if TYPE_CHECKING:
    from ts2export.rule.imported import ImportTable


@dataclass
class RuleContext:
    """What a rule may know about the file it checks."""

    path: str
    source: str
    options: Mapping[str, object] = field(default_factory=dict)
    # Rules are per file, so files run in parallel: what they may know of other files comes from
    # the program model, as plain data.
    program: ProgramView = field(default_factory=ProgramView)
    #: The reference path: every metadata provider resolved before the visit, scope analysis asked
    #: for every name. The default (False) computes metadata when first asked for and skips names
    #: that cannot match (see :meth:`Rule.matches`); tests check that both give the same findings.
    full_metadata: bool = False
    #: Each node's parent, filled by the engine's visit as it enters each node (so every node a rule
    #: visits, and all its ancestors, are in it when the rule runs; the module maps to None). None:
    #: not kept (the parent provider answers). See :meth:`Rule.parent`.
    parents: dict | None = None
    #: Each node's position, computed when a rule first asks (:mod:`ts2export.rule.metadata`) and
    #: reused by the engine for the findings. None: not computed yet.
    positions: dict | None = None
    #: Whether ``parents`` holds every node of the module (completed when a rule asked about a
    #: node the visit had not reached).
    parents_complete: bool = False
    #: ``id`` of a node -> (the node, its dotted name's first part, the rest, its last part), for
    #: :meth:`Rule.may_be_named` (each call of a file is asked about by a dozen rules).
    name_shapes: dict = field(default_factory=dict)
    #: ``id`` of each statement of the module -> its index in ``ast``'s module body (see
    #: :meth:`Rule._statement_index`). None: not computed yet.
    statement_indexes: dict | None = None

    @property
    def lines(self) -> list[str]:
        return self.source.splitlines()

    @functools.cached_property
    def _tree(self) -> ast.Module | None:
        """The file as Python's own parser reads it (None where it cannot)."""
        try:
            return ast.parse(self.source.lstrip("\ufeff"))
        except (SyntaxError, ValueError, RecursionError, MemoryError):
            return None

    @functools.cached_property
    def import_table(self) -> "ImportTable | None":
        """What the file's module-level imports bind (:mod:`ts2export.rule.imported`; None: unknown)."""
        from ts2export.rule.imported import import_table

        return import_table(self._tree) if self._tree is not None else None

    #: The nodes of the module's import statements (``id``s), found when first asked for (see
    #: :meth:`Rule.qualnames`).
    import_nodes: set | None = None

    @functools.cached_property
    def bound_names(self) -> tuple[dict[str, frozenset[str]], frozenset[str], frozenset[str]] | None:
        """What import statements bind anywhere in the file (name -> the dotted names libcst may
        give it: ``from torch.jit import script as s`` gives ``s`` -> ``torch.jit.script``), the
        names of the file's functions and classes, and every name bound otherwise (assigned, a
        parameter, a loop or ``with`` or ``except`` target, a definition) (None: unknown). Read from Python's own parser,
        without libcst's scope analysis (see :meth:`Rule.matches`)."""
        tree = self._tree
        if tree is None:
            return None
        imported: dict[str, set[str]] = {}
        defined: set[str] = set()
        assigned: set[str] = set()
        for node in ast.walk(tree):
            if isinstance(node, ast.Import):
                for a in node.names:
                    parts = a.name.split(".")
                    if a.asname:
                        imported.setdefault(a.asname, set()).add(a.name)
                    else:  # `import a.b.c` binds `a`, which libcst may name `a`, `a.b` or `a.b.c`
                        imported.setdefault(parts[0], set()).update(".".join(parts[:i]) for i in range(1, len(parts) + 1))
            elif isinstance(node, ast.ImportFrom):
                module = "." * node.level + (node.module or "")
                for a in node.names:
                    real = f"{module}{a.name}" if module.endswith(".") else f"{module}.{a.name}" if module else a.name
                    imported.setdefault(a.asname or a.name, set()).add(real)
            elif isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
                defined.add(node.name)
            elif isinstance(node, ast.Name) and isinstance(node.ctx, ast.Store):
                assigned.add(node.id)
            elif isinstance(node, ast.arg):
                assigned.add(node.arg)
            elif isinstance(node, (ast.ExceptHandler, ast.MatchAs, ast.MatchStar)) and node.name:
                assigned.add(node.name)
            elif isinstance(node, ast.MatchMapping) and node.rest:
                assigned.add(node.rest)
        return {k: frozenset(v) for k, v in imported.items()}, frozenset(defined), frozenset(assigned | defined)

    @functools.cached_property
    def libraries_through_the_run(self) -> frozenset[str]:
        """The names the file binds to a library only through a module of the run that re-exports
        it (``torch`` after ``from ..compat import torch``, see ``ProgramView.reexports``), and by no
        import of the library itself."""
        bound = self.bound_names
        if not self.program.reexports or bound is None:
            return frozenset()
        return frozenset(name for name, bases in bound[0].items()
                         if name not in bases and any(self.program.library_name(b) == name for b in bases))

