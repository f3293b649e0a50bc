"""Which assignments of a name may reach one of its uses, inside one function body (or a module's).

The program model follows a name to every value it is bound to in its scope. That view is safe but
coarse: a helper that does ``if mode == "script": module = torch.jit.script(module)`` in one
branch and ``module = torch.compile(module)`` in another makes the script's argument look like the
compiled callable too. :func:`reaches` answers, from the statements' nesting alone, whether an
assignment can have run last before a use:

- an assignment in one branch of an ``if`` never reaches a use in the other branch, unless a loop
  around that ``if`` (inside the function) runs both;
- an assignment after the use (or in the very statement whose value it is) reaches it only through
  a loop around both;
- an assignment is killed by a plain assignment of the same name that runs on every path between
  them: a statement of a block that holds the use, after the first assignment and before the use.

Uses inside a lambda or a generator expression, which may run later, are not filtered (see
:func:`deferred`), nor are uses from another scope (a closure reads the name's last value).
"""

from __future__ import annotations

import ast
from bisect import bisect_right

_LOOPS = (ast.For, ast.AsyncFor, ast.While)
#: The blocks of a compound statement, in the order they are laid out.
_ARMS = ("body", "handlers", "orelse", "finalbody", "cases")

Step = tuple[ast.stmt, str]  # a statement, and which of its blocks (or "head") holds the position


class Blocks:
    """The statement nesting of one function body (or module), to place positions in it."""

    def __init__(self, body: list[ast.stmt]) -> None:
        self.body = body
        self._starts: dict[int, list[tuple[int, int]]] = {}

    def _starts_of(self, block: list[ast.stmt]) -> list[tuple[int, int]]:
        found = self._starts.get(id(block))
        if found is None:
            found = self._starts[id(block)] = [_first(s) for s in block]
        return found

    def path(self, node: ast.AST) -> list[Step]:
        """The statements around ``node``, outermost first, each with the block that holds it."""
        pos = (node.lineno, node.col_offset)
        steps: list[Step] = []
        block: list | None = self.body
        while block:
            i = bisect_right(self._starts_of(block), pos) - 1
            if i < 0:
                break
            stmt = block[i]
            if (stmt.end_lineno, stmt.end_col_offset) < pos:
                break
            arm, inner = _arm(stmt, pos)
            steps.append((stmt, arm))
            block = inner
        return steps


def _first(stmt: ast.stmt) -> tuple[int, int]:
    decorators = getattr(stmt, "decorator_list", None)
    first = decorators[0] if decorators else stmt
    return first.lineno, first.col_offset - (1 if decorators else 0)


def _arm(stmt: ast.stmt, pos: tuple[int, int]) -> tuple[str, list | None]:
    """Which block of ``stmt`` holds ``pos`` (a handler or a case as its own block), or "head"."""
    for name in _ARMS:
        block = getattr(stmt, name, None)
        if not block:
            continue
        if name in ("handlers", "cases"):
            for i, part in enumerate(block):
                first = part if name == "handlers" else part.pattern  # a case has no position of its own
                if (first.lineno, first.col_offset) <= pos <= (part.body[-1].end_lineno, part.body[-1].end_col_offset):
                    return f"{name}{i}", part.body
            continue
        if (block[0].lineno, _first(block[0])[1]) <= pos <= (block[-1].end_lineno, block[-1].end_col_offset):
            return name, block
    return "head", None


def _within(node: ast.AST, pos: tuple[int, int]) -> bool:
    return (node.lineno, node.col_offset) <= pos <= (node.end_lineno, node.end_col_offset)


def _looped(steps: list[Step]) -> bool:
    return any(isinstance(stmt, _LOOPS) and arm == "body" for stmt, arm in steps)


def deferred(steps: list[Step], node: ast.AST) -> bool:
    """Whether ``node`` sits in a lambda or a generator expression of its statement (it may run
    later), or is not placed in a statement's head at all."""
    if not steps or steps[-1][1] != "head":
        return True
    stmt = steps[-1][0]
    pos = (node.lineno, node.col_offset)
    for field, value in ast.iter_fields(stmt):
        if field in _ARMS:
            continue  # the head only: the use is not in the statement's blocks
        for part in value if isinstance(value, list) else [value]:
            if not isinstance(part, ast.AST):
                continue
            for sub in ast.walk(part):
                if isinstance(sub, (ast.Lambda, ast.GeneratorExp)) and _within(sub, pos):
                    return True
    return False


def reaches(blocks: Blocks, value: ast.AST, use: ast.AST, others: list[ast.AST]) -> bool:
    """Whether the assignment whose value is ``value`` (a parameter when None: bound before the
    body) may be the last one to bind the name before ``use`` runs. ``others``: the values of the
    name's other assignments, which may kill it."""
    at = blocks.path(use)
    if not at or deferred(at, use):
        return True
    if value is not None:
        source = blocks.path(value)
        if not source:
            return True
        k = 0
        while k < min(len(source), len(at)) and source[k] == at[k]:
            k += 1
        shared = at[:k]
        if k < len(source) and k < len(at) and source[k][0] is at[k][0]:
            stmt = source[k][0]
            if (isinstance(stmt, ast.If) and {source[k][1], at[k][1]} == {"body", "orelse"}
                    and not _looped(shared)):
                return False  # the two arms of one `if`, with no loop around it
        if k == len(source) == len(at):
            stmt = source[-1][0]  # the use is in the assignment's own statement
            if isinstance(stmt, (ast.Assign, ast.AnnAssign)) and stmt.value is value and not _looped(shared):
                return False  # `m = torch.jit.script(m)`: the right side reads the value before
        elif (value.lineno, value.col_offset) > (use.lineno, use.col_offset) and not _looped(shared):
            return False  # assigned after the use, with no loop around both
    for other in others:
        if other is value or other is None:
            continue
        if _kills(blocks, other, value, at):
            return False
    return True


def _kills(blocks: Blocks, other: ast.AST, value: ast.AST | None, at: list[Step]) -> bool:
    """Whether the plain assignment of ``other`` runs on every path from ``value``'s to the use."""
    where = blocks.path(other)
    if not where or where[-1][1] != "head":
        return False
    stmt = where[-1][0]
    if not (isinstance(stmt, (ast.Assign, ast.AnnAssign)) and stmt.value is other):
        return False
    targets = stmt.targets if isinstance(stmt, ast.Assign) else [stmt.target]
    if not all(isinstance(t, ast.Name) for t in targets):
        return False
    depth = len(where) - 1  # `stmt` is a statement of the block that holds at[depth] (if it does)
    if depth >= len(at) or where[:depth] != at[:depth] or at[depth][0] is stmt:
        return False
    ahead = at[depth][0]
    if (stmt.end_lineno, stmt.end_col_offset) > (ahead.lineno, ahead.col_offset):
        return False  # after the use's statement in that block
    if value is None:
        return True  # a parameter: bound before the block runs
    v = (value.lineno, value.col_offset)
    return not ((stmt.end_lineno, stmt.end_col_offset) <= v <= (ahead.end_lineno, ahead.end_col_offset))
