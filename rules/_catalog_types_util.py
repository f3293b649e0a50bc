"""Helpers shared by the decorator / class-structure (TSX102-TSX108) and typing-helper
(TSX202-TSX204) rules. Private: the registry skips modules whose names start with ``_``."""

from __future__ import annotations

from typing import Iterator

import libcst as cst
from libcst.metadata import ScopeProvider

from ts2export.rule import Edit, Rule

SCRIPT_MODULE = ("torch.jit.ScriptModule", "torch.jit._script.ScriptModule")


def enclosing(rule: Rule, node: cst.CSTNode, kind: type) -> cst.CSTNode | None:
    """The nearest ancestor of ``node`` that is a ``kind`` (None if there is none)."""
    current = rule.parent(node)
    while current is not None and not isinstance(current, kind):
        current = rule.parent(current)
    return current


def enclosing_class_of_def(rule: Rule, func: cst.FunctionDef) -> cst.ClassDef | None:
    """The class whose body directly holds ``func`` (a method), else None."""
    block = rule.parent(func)
    owner = rule.parent(block) if isinstance(block, cst.IndentedBlock) else None
    return owner if isinstance(owner, cst.ClassDef) else None


def is_script_module_class(rule: Rule, cls: cst.ClassDef | None) -> bool:
    """Whether ``cls`` names ``torch.jit.ScriptModule`` among its bases."""
    return cls is not None and any(rule.matches(b.value, *SCRIPT_MODULE) for b in cls.bases)


def methods(cls: cst.ClassDef) -> Iterator[cst.FunctionDef]:
    body = cls.body.body if isinstance(cls.body, cst.IndentedBlock) else ()
    for stmt in body:
        if isinstance(stmt, cst.FunctionDef):
            yield stmt


def self_attribute_uses(cls: cst.ClassDef, attr: str, skip: cst.CSTNode | None = None) -> int:
    """How many times ``self.<attr>`` occurs in ``cls`` (outside ``skip``)."""
    count = 0

    class _V(cst.CSTVisitor):
        def visit_FunctionDef(self, node: cst.FunctionDef) -> bool:
            return node is not skip

        def visit_Attribute(self, node: cst.Attribute) -> None:
            nonlocal count
            if isinstance(node.value, cst.Name) and node.value.value == "self" and node.attr.value == attr:
                count += 1

    cls.body.visit(_V())
    return count


def decorator_target(dec: cst.Decorator) -> cst.BaseExpression:
    return dec.decorator.func if isinstance(dec.decorator, cst.Call) else dec.decorator


def global_assignments(rule: Rule, node: cst.CSTNode, name: str) -> list:
    """The assignments of ``name`` visible from ``node``'s scope (empty when unknown)."""
    try:
        scope = rule.get_metadata(ScopeProvider, node, None)
    except KeyError:  # pragma: no cover
        return []
    if scope is None:
        return []
    return rule.in_source_order(scope[name], node_of=lambda a: getattr(a, "node", None))  # a set: the same order in every run


def local_def(rule: Rule, name: cst.Name) -> cst.FunctionDef | cst.ClassDef | None:
    """The ``def``/``class`` of this file that ``name`` refers to, when every binding of it in
    scope is that definition or an assignment from ``torch.jit.script(<that name>)``."""
    found: cst.FunctionDef | cst.ClassDef | None = None
    for a in global_assignments(rule, name, name.value):
        node = getattr(a, "node", None)
        if isinstance(node, (cst.FunctionDef, cst.ClassDef)):
            if found is not None and found is not node:
                return None
            found = node
        elif isinstance(node, cst.Name):
            stmt = rule.parent(node)
            if isinstance(stmt, cst.AssignTarget):
                stmt = rule.parent(stmt)
            value = getattr(stmt, "value", None)
            if not (
                isinstance(stmt, cst.Assign)
                and isinstance(value, cst.Call)
                and rule.matches(value.func, "torch.jit.script")
                and value.args
                and isinstance(value.args[0].value, cst.Name)
                and value.args[0].value.value == name.value
            ):
                return None
        else:
            return None
    return found


def derives_from_module(rule: Rule, cls: cst.ClassDef) -> bool:
    """Whether a class visibly derives from ``torch.nn.Module`` (or a ScriptModule)."""
    for base in cls.bases:
        if rule.matches_prefix(base.value, "torch.nn", "torch.jit"):
            return True
        code = rule.code_of(base.value)
        if code.endswith("Module"):
            return True
    return False


def module_imports(module: cst.Module) -> list[cst.Import | cst.ImportFrom]:
    out = []
    for stmt in module.body:
        if isinstance(stmt, cst.SimpleStatementLine):
            out.extend(s for s in stmt.body if isinstance(s, (cst.Import, cst.ImportFrom)))
    return out


def binds(imp: cst.Import | cst.ImportFrom, module: str, name: str | None, bound: str) -> bool:
    """Whether ``imp`` is ``from module import name`` / ``import module`` binding ``bound``."""
    if isinstance(imp.names, cst.ImportStar):
        return False
    if isinstance(imp, cst.ImportFrom):
        if imp.relative or imp.module is None or Rule.code_of(imp.module) != module or name is None:
            return False
        return any(a.evaluated_name == name and (a.evaluated_alias or a.evaluated_name) == bound for a in imp.names)
    if name is not None:
        return False
    return any(a.evaluated_name == module and (a.evaluated_alias or a.evaluated_name) == bound for a in imp.names)


def nn_module_expr(module: cst.Module) -> tuple[cst.BaseExpression, str | None]:
    """``nn.Module`` when the file binds ``nn`` to ``torch.nn``, else ``torch.nn.Module``.
    Returns the expression and the module to import (None: nothing to add)."""
    imports = module_imports(module)
    if any(binds(i, "torch", "nn", "nn") or binds(i, "torch.nn", None, "nn") for i in imports):
        return cst.parse_expression("nn.Module"), None
    return cst.parse_expression("torch.nn.Module"), "torch"


def remove_statement_edits(rule: Rule, small: cst.BaseSmallStatement) -> list[Edit]:
    """Edits that make the small statement ``small`` disappear: its line when it stands alone
    (its comments go with it; its blank lines move to the next statement when that has none, so
    the separation from what precedes stays; a block left empty gets ``pass``)."""
    line = rule.parent(small)
    if not (isinstance(line, cst.SimpleStatementLine) and len(line.body) == 1):
        return [Edit(small, cst.RemovalSentinel.REMOVE)]
    block = rule.parent(line)
    body = list(getattr(block, "body", ()))
    index = next((i for i, s in enumerate(body) if s is line), None)
    if index is None:  # pragma: no cover
        return [Edit(line, cst.RemovalSentinel.REMOVE)]
    if len(body) == 1:
        return [Edit(small, cst.Pass())]
    if index + 1 < len(body):
        nxt = body[index + 1]
        blanks = [ln for ln in line.leading_lines if ln.comment is None]
        nxt_lines = getattr(nxt, "leading_lines", None)
        if blanks and nxt_lines is not None and not any(ln.comment is None for ln in nxt_lines):
            # Keep the separation the removed line had from what precedes it (its comments go with it).
            merged = [*blanks, *nxt_lines]
            return [Edit(line, cst.RemovalSentinel.REMOVE), Edit(nxt, nxt.with_changes(leading_lines=merged))]
    return [Edit(line, cst.RemovalSentinel.REMOVE)]
