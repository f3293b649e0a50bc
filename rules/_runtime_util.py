"""Statement-level edits shared by the runtime / optimisation rules (TSX5xx, TSX6xx).

Not a rule module (the registry skips modules whose names start with ``_``). Everything here
builds :class:`ts2export.rule.Edit` lists or replacement nodes; it never applies them.
"""

from __future__ import annotations

from typing import Sequence

import libcst as cst

from ts2export.rule import Edit, Rule

def pass_line(leading_lines: Sequence[cst.EmptyLine] = ()) -> cst.SimpleStatementLine:
    return cst.SimpleStatementLine(body=[cst.Pass()], leading_lines=list(leading_lines))


def block_statements(block: cst.BaseSuite) -> list[cst.BaseStatement]:
    """The statements of a suite as statements that may stand in the enclosing block."""
    if isinstance(block, cst.IndentedBlock):
        return list(block.body)
    assert isinstance(block, cst.SimpleStatementSuite)
    body = list(block.body)
    if body:  # drop a trailing semicolon on the last small statement
        body[-1] = body[-1].with_changes(semicolon=cst.MaybeSentinel.DEFAULT)
    return [cst.SimpleStatementLine(body=body, trailing_whitespace=block.trailing_whitespace)]


def _with_leading(stmt: cst.BaseStatement, lines: Sequence[cst.EmptyLine]) -> cst.BaseStatement:
    if not lines:
        return stmt
    return stmt.with_changes(leading_lines=[*lines, *stmt.leading_lines])


def _blank_prefix(lines: Sequence[cst.EmptyLine]) -> int:
    n = 0
    for line in lines:
        if line.comment is not None:
            break
        n += 1
    return n


def _next_sibling(rule: Rule, stmt: cst.BaseStatement) -> cst.BaseStatement | None:
    parent = rule.parent(stmt)
    body = parent.body if isinstance(parent, (cst.IndentedBlock, cst.Module)) else None
    if not isinstance(body, (list, tuple)):
        return None
    for i, node in enumerate(body):
        if node is stmt:
            return body[i + 1] if i + 1 < len(body) else None
    return None


def _is_first(rule: Rule, stmt: cst.BaseStatement) -> bool:
    parent = rule.parent(stmt)
    body = parent.body if isinstance(parent, (cst.IndentedBlock, cst.Module)) else None
    return isinstance(body, (list, tuple)) and bool(body) and body[0] is stmt


def statement_edits(rule: Rule, stmt: cst.BaseStatement, new: Sequence[cst.BaseStatement]) -> list[Edit]:
    """Edits that replace statement ``stmt`` by the statements ``new``.

    The comments above ``stmt`` move onto the first new statement. When ``new`` is empty the
    statement is removed, or becomes ``pass`` where it is the only statement of its block; the
    blank lines that separated it from the code above are kept (moved onto the next statement)."""
    leading = list(stmt.leading_lines)
    if new:
        out = [_with_leading(new[0], leading), *new[1:]]
        return [Edit(stmt, out[0] if len(out) == 1 else cst.FlattenSentinel(out))]
    parent = rule.parent(stmt)
    if isinstance(parent, cst.IndentedBlock) and len(parent.body) == 1:
        return [Edit(stmt, pass_line(leading))]
    edits = [Edit(stmt, cst.RemovalSentinel.REMOVE)]
    blanks = _blank_prefix(leading)
    following = _next_sibling(rule, stmt)
    if following is not None and _is_first(rule, stmt):
        # the next statement becomes the first of its block: no blank line above it
        strip = _blank_prefix(following.leading_lines)
        if strip:
            edits.append(Edit(following, following.with_changes(leading_lines=list(following.leading_lines)[strip:])))
    elif following is not None and blanks > _blank_prefix(following.leading_lines):
        missing = blanks - _blank_prefix(following.leading_lines)
        edits.append(Edit(following, following.with_changes(
            leading_lines=[*leading[:missing], *following.leading_lines])))
    return edits


def remove_small_statement(rule: Rule, small: cst.BaseSmallStatement) -> list[Edit] | None:
    """Edits that remove an expression statement (``small``) from its line or suite."""
    line = rule.parent(small)
    if isinstance(line, cst.SimpleStatementLine):
        if len(line.body) == 1:
            return statement_edits(rule, line, [])
        return [Edit(small, cst.RemovalSentinel.REMOVE)]
    if isinstance(line, cst.SimpleStatementSuite):
        if len(line.body) == 1:
            return [Edit(small, cst.Pass())]
        return [Edit(small, cst.RemovalSentinel.REMOVE)]
    return None


def expression_statement(rule: Rule, call: cst.BaseExpression) -> cst.Expr | None:
    """The ``Expr`` statement whose value is ``call`` (the call's value is discarded), else None."""
    parent = rule.parent(call)
    if isinstance(parent, cst.Expr) and parent.value is call:
        return parent
    return None


def remove_with_item(rule: Rule, item: cst.WithItem) -> list[Edit] | None:
    """Edits that drop one ``with`` item: the whole statement (body un-indented) if it is the only item.

    None where the item binds a name (``as x``): code may use ``x``."""
    if item.asname is not None:
        return None
    stmt = rule.parent(item)
    if not isinstance(stmt, cst.With):
        return None
    if len(stmt.items) == 1:
        if stmt.asynchronous is not None:
            return None
        return statement_edits(rule, stmt, block_statements(stmt.body))
    items = [i for i in stmt.items if i is not item]
    last = stmt.items[-1]
    if item is last:  # the new last item takes the old last item's comma (usually none)
        items[-1] = items[-1].with_changes(comma=last.comma)
    return [Edit(stmt, stmt.with_changes(items=items))]


class KnobRule(Rule):
    """Base of the rules that remove TorchScript executor/fusion settings (not itself a rule).

    Subclasses set ``STATEMENT_CALLS`` (qualified names of calls removed where they stand as a
    statement), ``CONTEXT_MANAGERS`` (qualified names of context managers removed from ``with``),
    ``WHAT`` (how messages name the construct) and ``REASON`` (why it can go)."""

    # The settings only change how TorchScript runs code (speed, fusion), not what it computes.
    keeps_torchscript = True
    keeps_tracing = True

    STATEMENT_CALLS: tuple[str, ...] = ()
    STATEMENT_PREFIXES: tuple[str, ...] = ()
    CONTEXT_MANAGERS: tuple[str, ...] = ()
    #: Those of ``CONTEXT_MANAGERS`` that are generator functions under ``contextlib.contextmanager``:
    #: calling one outside a ``with`` builds a context manager and runs none of its code
    #: (tests/test_rule_examples.py checks this on torch), so such a statement does nothing.
    INERT_CALLS: tuple[str, ...] = ()
    REASON = "only TorchScript's executor reads this setting (eager, torch.compile and torch.export ignore it)"

    def _name(self, call: cst.Call) -> str | None:
        name = self.matches(call.func, *self.STATEMENT_CALLS, *self.CONTEXT_MANAGERS)
        if name:
            return name
        if not self.STATEMENT_PREFIXES or not self.may_be_named(call.func, self.STATEMENT_PREFIXES, prefix=True):
            return None
        for q in sorted(self.qualnames(call.func)):
            if any(q.startswith(p) for p in self.STATEMENT_PREFIXES):
                return q
        return None

    def visit_Call(self, node: cst.Call) -> None:
        name = self._name(node)
        if name is None:
            return
        shown = f"`{name}(...)`"
        parent = self.parent(node)
        if name in self.CONTEXT_MANAGERS:
            if isinstance(parent, cst.WithItem) and parent.item is node:
                edits = remove_with_item(self, parent)
                if edits:
                    self.report(node, f"{shown}: remove the context manager; {self.REASON}", edits=edits)
                else:
                    self.report(node, f"{shown} binds a name with `as` or is used in `async with`; remove it by hand: "
                                      f"{self.REASON}")
                return
            stmt = expression_statement(self, node)
            edits = remove_small_statement(self, stmt) if stmt is not None and name in self.INERT_CALLS \
                and all(_inert(a.value) for a in node.args) else None
            if edits:
                self.report(node, f"{shown} called outside a `with` statement builds a context manager and drops it: "
                                  f"the statement does nothing, remove it ({self.REASON})", edits=edits)
            else:
                self.report(node, f"{shown} used outside a `with` statement; remove it by hand: {self.REASON}")
            return
        stmt = expression_statement(self, node)
        edits = remove_small_statement(self, stmt) if stmt is not None else None
        if edits:
            self.report(node, f"{shown}: remove the call; {self.REASON}", edits=edits)
        else:
            self.report(node, f"{shown} is used as a value (it returns the previous setting); remove it together with "
                              f"the code that restores the setting: {self.REASON}")


def _inert(value: cst.BaseExpression) -> bool:
    """A name or a literal: evaluating it runs no code (a call, an attribute's property, an
    operator's method may)."""
    return isinstance(value, (cst.Name, cst.Integer, cst.Float, cst.SimpleString))

