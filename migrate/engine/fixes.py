"""Writing one round of fixes into a module: the fixes that overlap no fix taken before them, their
edits applied, the imports the new code needs added and those it leaves unused removed; the
result must parse and compile, else the culprit fixes are dropped and named."""

from __future__ import annotations

import ast
import os
from typing import Sequence

import libcst as cst
from libcst.metadata import MetadataWrapper, PositionProvider, ScopeProvider

from ts2export.rule import Finding, Fix


class _ApplyEdits(cst.CSTTransformer):
    def __init__(self, edits: dict[int, object]) -> None:
        super().__init__()
        self.edits = edits

    def on_leave(self, original_node, updated_node):  # type: ignore[override]
        replacement = self.edits.get(id(original_node))
        return updated_node if replacement is None else replacement


def _import_bindings(wrapper: MetadataWrapper) -> dict[tuple[str, str], int]:
    """(import statement code, bound name) -> number of references, over all scopes."""
    module = wrapper.module
    usage: dict[tuple[str, str], int] = {}
    for scope in set(wrapper.resolve(ScopeProvider).values()):
        if scope is None:
            continue
        for assignment in scope.assignments:
            node = getattr(assignment, "node", None)
            if isinstance(node, (cst.Import, cst.ImportFrom)):
                key = (module.code_for_node(node), assignment.name)
                usage[key] = usage.get(key, 0) + len(assignment.references)
    return usage


def _unused_import_removals(before: dict, after_wrapper: MetadataWrapper) -> list[tuple[str, str | None, str | None]]:
    """Imports used before the fixes and unused after them: (module, obj, asname) to remove."""
    after = _import_bindings(after_wrapper)
    module = after_wrapper.module
    removals = []
    for stmt in _all_imports(module):
        code = module.code_for_node(stmt)
        if isinstance(stmt.names, cst.ImportStar):
            continue
        for alias in stmt.names:
            bound = alias.evaluated_alias or alias.evaluated_name
            if isinstance(stmt, cst.Import) and alias.asname is None:
                bound = alias.evaluated_name
            key = (code, bound)
            if before.get(key, 0) > 0 and after.get(key, 0) == 0:
                if isinstance(stmt, cst.Import):
                    removals.append((alias.evaluated_name, None, alias.evaluated_alias))
                else:
                    mod = cst.Module(body=[]).code_for_node(stmt.module) if stmt.module else ""
                    mod = "." * len(stmt.relative) + mod
                    removals.append((mod, alias.evaluated_name, alias.evaluated_alias))
    return removals


def _all_imports(module: cst.Module) -> list[cst.Import | cst.ImportFrom]:
    found: list = []

    class _V(cst.CSTVisitor):
        def visit_Import(self, node: cst.Import) -> None:
            found.append(node)

        def visit_ImportFrom(self, node: cst.ImportFrom) -> None:
            found.append(node)

    module.visit(_V())
    return found


def _still_referenced(before: dict, code: str) -> bool:
    """True when each import binding that had references before the fixes surely has one in
    ``code`` (so no import became unused and scope analysis of the new module can be spared): a
    plain name bound once in the whole module, by a module-level import, and read somewhere (the
    import table of the rule API, :mod:`ts2export.rule.imported`, knows which names only one such
    import binds). False whenever that is not certain (dotted imports, names bound twice, local
    imports, a ``*`` import)."""
    from ts2export.rule.imported import import_table

    names = {name for (_, name), n in before.items() if n > 0}
    if not names:
        return True
    if any("." in name for name in names):
        return False
    try:
        tree = ast.parse(code)
    except (SyntaxError, ValueError):
        return False
    table = import_table(tree)
    if table.star or table.dotted_heads:  # `import a.b` binds `a` and `a.b`: libcst counts them apart
        return False
    if any(len(table.bound.get(name, ())) != 1 or name in table.otherwise for name in names):
        return False
    read = {node.id for node in ast.walk(tree) if isinstance(node, ast.Name) and isinstance(node.ctx, ast.Load)}
    return names <= read


def _nothing_to_add(context, module: cst.Module) -> bool:
    """True when every import asked for in ``context`` is already among the module's top imports,
    where ``AddImportsVisitor`` would change nothing (it finds them the same way, after a walk of
    the whole tree and a copy of it)."""
    from libcst.codemod.visitors import AddImportsVisitor

    try:
        from libcst.codemod.visitors._add_imports import _GatherTopImportsBeforeStatements
    except ImportError:  # another libcst: let the visitor decide
        return False
    wanted = AddImportsVisitor(context)
    have = _GatherTopImportsBeforeStatements(context)
    have.leave_Module(module)  # it reads only the module's top statements (the visitor walks the tree first)
    if wanted.module_imports - have.module_imports:
        return False
    if any(have.module_aliases.get(mod) != alias for mod, alias in wanted.module_aliases.items()):
        return False
    if any(pair not in have.alias_mapping.get(mod, []) for mod, pairs in wanted.alias_mapping.items() for pair in pairs):
        return False
    return all("*" in have.object_mapping.get(mod, set()) or not objs - have.object_mapping.get(mod, set())
               for mod, objs in wanted.module_mapping.items())


_TOP_IMPORTS_VISITOR: list = []


def _add_imports(context, module: cst.Module) -> cst.Module:
    """What ``AddImportsVisitor(context).transform_module(module)`` gives, walking only what that
    visitor reads: it looks for the imports already there among the module's leading statements
    and rewrites the `from` imports among them, but walks the whole tree twice to do so, after
    copying it (for metadata it does not use)."""
    if not _TOP_IMPORTS_VISITOR:
        from libcst.codemod.visitors import AddImportsVisitor

        class _TopImports(AddImportsVisitor):
            def visit_Module(self, node: cst.Module) -> None:
                # its gatherer reads the statements up to the first that is not an import (after a
                # docstring or `__strict__`): hand it those, the same nodes, not the whole tree
                cut = next((i for i, stmt in enumerate(node.body) if i >= 1 and not _is_import_line(stmt)), len(node.body))
                super().visit_Module(node.with_changes(body=node.body[:cut + 1]))

            def on_visit(self, node: cst.CSTNode) -> bool:
                # the visitor acts on the module and its `from` imports; nothing inside a compound
                # statement or an expression is one of the module's leading imports
                if isinstance(node, (cst.Module, cst.SimpleStatementLine, cst.ImportFrom)):
                    return super().on_visit(node)
                return False

        _TOP_IMPORTS_VISITOR.append(_TopImports)
    return module.visit(_TOP_IMPORTS_VISITOR[0](context))


def _is_import_line(stmt: cst.CSTNode) -> bool:
    return (isinstance(stmt, cst.SimpleStatementLine) and len(stmt.body) == 1
            and isinstance(stmt.body[0], (cst.Import, cst.ImportFrom)))


def _manage_imports(old_usage: dict, module: cst.Module, fixes: Sequence[Fix], rendered: dict | None = None) -> cst.Module:
    # imported here: libcst.codemod loads libcst.matchers (about a second), needed only to fix
    from libcst.codemod import CodemodContext
    from libcst.codemod.visitors import AddImportsVisitor, RemoveImportsVisitor

    context = CodemodContext()
    for fix in fixes:
        for imp in fix.imports:
            AddImportsVisitor.add_needed_import(context, imp.module, imp.name, imp.asname)
    # The full path (the reference, see RuleContext) asks libcst every time; tests/test_fast_path.py
    # compares the two over the corpus and real files.
    full = os.environ.get("TS2EXPORT_FULL_METADATA") == "1"
    if full or not _still_referenced(old_usage, _code(module, rendered)):
        wrapper = MetadataWrapper(module, unsafe_skip_copy=True)
        for mod, obj, asname in _unused_import_removals(old_usage, wrapper):
            RemoveImportsVisitor.remove_unused_import(context, mod, obj, asname)
    if context.scratch.get(AddImportsVisitor.CONTEXT_KEY) and (full or not _nothing_to_add(context, module)):
        module = AddImportsVisitor(context).transform_module(module) if full else _add_imports(context, module)
    if context.scratch.get(RemoveImportsVisitor.CONTEXT_KEY):
        first_before = _first_statement_code(module)
        module = RemoveImportsVisitor(context).transform_module(module)
        if module.body and _first_statement_code(module) != first_before:
            # The file's first statement went: don't leave the file opening with blank lines.
            first = module.body[0]
            lines = list(first.leading_lines)
            while lines and lines[0].comment is None:
                lines.pop(0)
            module = module.with_changes(body=[first.with_changes(leading_lines=lines), *module.body[1:]])
    return module


def _first_statement_code(module: cst.Module) -> str | None:
    if not module.body:
        return None
    first = module.body[0]
    return module.code_for_node(first.with_changes(leading_lines=()))


def _code(module: cst.Module, rendered: dict | None) -> str:
    """The module's code, rendered once: ``rendered`` keeps (module, code) under the module's id."""
    if rendered is None:
        return module.code
    kept = rendered.get(id(module))
    if kept is None or kept[0] is not module:
        kept = rendered[id(module)] = (module, module.code)
    return kept[1]


def _compiles(module: cst.Module, path: str, rendered: dict | None = None) -> str | None:
    """None if the module's code parses and compiles, else why not. ``rendered``: see ``_code``
    (the next round reads the code from it instead of rendering again)."""
    code = _code(module, rendered)
    try:
        cst.parse_module(code)
        compile(code, path, "exec", dont_inherit=True)
    except (cst.ParserSyntaxError, SyntaxError, ValueError) as exc:
        return str(exc).splitlines()[0] if str(exc) else type(exc).__name__
    return None


def _overlaps(a: tuple, b: tuple) -> bool:
    return a[0] < b[1] and b[0] < a[1]


def _overlap_groups(spans_of: list[list[tuple]]) -> list[int]:
    """A group number for each fix (a list of spans), such that fixes whose spans overlap are in
    one group: one sweep over the spans sorted by start. Which fix of a round waits for the next
    depends only on the fixes of its group, so each is checked against its group alone (a file
    with 150,000 fixes, none overlapping, no longer compares every pair)."""
    parent = list(range(len(spans_of)))

    def find(i: int) -> int:
        while parent[i] != i:
            parent[i] = parent[parent[i]]
            i = parent[i]
        return i

    events = sorted((s[0], s[1], i) for i, spans in enumerate(spans_of) for s in spans)
    cluster_end, cluster_owner = None, -1
    for start, end, i in events:
        if cluster_end is not None and start < cluster_end:  # overlaps the cluster (see _overlaps)
            parent[find(i)] = find(cluster_owner)
            cluster_end = max(cluster_end, end)
        else:
            cluster_end, cluster_owner = end, i
    return [find(i) for i in range(len(spans_of))]


def _first_come(spans_of: list[list[tuple]]) -> list[int]:
    """The fixes (lists of spans) that overlap no fix before them that was taken, in order: a
    fix is checked against the taken fixes of its overlap group only."""
    group = _overlap_groups(spans_of)
    taken: dict[int, list[tuple]] = {}  # a group's taken spans
    out: list[int] = []
    for i, spans in enumerate(spans_of):
        mine = taken.setdefault(group[i], [])
        if any(_overlaps(s, t) for s in spans for t in mine):
            continue
        mine.extend(spans)
        out.append(i)
    return out


def apply_round(
    wrapper: MetadataWrapper, findings: list[Finding], path: str, dropped: set, notes: list[str],
    positions: dict | None = None,
) -> tuple[cst.Module | None, list[Finding], str | None]:
    """Apply non-overlapping fixes of one round; returns the new module, the findings fixed and
    the new module's code where it was rendered to check it (else None).
    ``positions``: the module's positions where the caller has them (else they are computed)."""
    if positions is None:
        positions = wrapper.resolve(PositionProvider)
    usage = _import_bindings(wrapper)

    def span(fix: Fix) -> list[tuple]:
        out = []
        for e in fix.edits:
            p = positions[e.node]
            out.append(((p.start.line, p.start.column), (p.end.line, p.end.column)))
        return out

    # Outer fixes first: they copy the code of constructs nested in them, so a nested finding keeps
    # its anchor (its code) for the next round, and the program model's decision still names it.
    def extent(f: Finding) -> tuple:
        spans = span(f.fix)
        first = min(s[0] for s in spans) if spans else (0, 0)
        last = max(s[1] for s in spans) if spans else (0, 0)
        return (-(last[0] - first[0]), -(last[1] - first[1] if last[0] == first[0] else 0), first)

    ordered = [(f, span(f.fix)) for f in sorted(findings, key=extent)]
    accepted = [ordered[i] for i in _first_come([spans for _, spans in ordered])]  # the others: next round
    if not accepted:
        return None, [], None

    rendered: dict = {}  # id -> (module, code): each tree of this round rendered once

    def build(chosen: list[Finding]) -> cst.Module:
        edits = {id(e.node): e.replacement for f in chosen for e in f.fix.edits}
        new = wrapper.module.visit(_ApplyEdits(edits))
        return _manage_imports(usage, new, [f.fix for f in chosen], rendered)

    chosen = [f for f, _ in accepted]
    try:
        new = build(chosen)
        problem = _compiles(new, path, rendered)
    except Exception as exc:  # a rule built an invalid tree
        problem = f"{type(exc).__name__}: {exc}"
    if problem is None:
        return new, chosen, _code(new, rendered)
    # Find the culprits one by one; keep every fix that compiles on its own and with the others.
    good: list[Finding] = []
    for f in chosen:
        try:
            candidate = build([*good, f])
            problem = _compiles(candidate, path, rendered)
        except Exception as exc:
            problem = f"{type(exc).__name__}: {exc}"
        if problem is None:
            good.append(f)
        else:
            dropped.add(fix_key(f, wrapper.module))
            notes.append(f"{path}:{f.line}:{f.column}: {f.rule_id} fix not applied: the result would not compile ({problem})")
    if not good:
        return None, [], None
    return build(good), good, None


def fix_key(f: Finding, module: cst.Module) -> tuple:
    return (f.rule_id, f.message, tuple(module.code_for_node(e.node) for e in f.fix.edits))
