"""Code that torch.export does not trace once a fix is written: the branch that runs only in eager
Python under a condition the fix makes True under export (``if not torch.jit.is_scripting():``
written ``if not torch.compiler.is_exporting():``), and the functions only such branches call.

The shapes read (a call with no arguments as an ``if``'s whole test): ``if not CALL:`` skips its
body; ``if CALL: ... else: ...`` skips the ``else``; ``if CALL: return ...`` (the body ends in
``return`` or ``raise``, no ``else``) skips the statements after it in the same block. Any other
condition (``CALL and other``) is left alone: export may trace it.
"""

from __future__ import annotations

import ast
from typing import Iterable, Iterator

from ts2export.model.pyfile import PyFile

Lines = tuple[int, int]


def eager_only_lines(f: PyFile, line: int) -> Lines | None:
    """Lines (first, last) that run only in eager Python, for the condition called on ``line``."""
    for block in _blocks(f.tree):
        for i, node in enumerate(block):
            if not isinstance(node, ast.If):
                continue
            test = node.test
            negated = isinstance(test, ast.UnaryOp) and isinstance(test.op, ast.Not)
            call = test.operand if negated else test
            if not (isinstance(call, ast.Call) and not call.args and not call.keywords and call.lineno == line):
                continue
            if negated:
                return node.body[0].lineno, node.body[-1].end_lineno or node.body[-1].lineno
            if node.orelse:
                return node.orelse[0].lineno, node.orelse[-1].end_lineno or node.orelse[-1].lineno
            if isinstance(node.body[-1], (ast.Return, ast.Raise)) and i + 1 < len(block):
                return block[i + 1].lineno, block[-1].end_lineno or block[-1].lineno
            return None
    return None


def only_called_from(files: Iterable[PyFile], name: str, skipped: dict[str, list[Lines]]) -> bool:
    """Whether every use of ``name`` (as a name or an attribute) in ``files`` lies in ``skipped``
    lines of its file, and there is one at least: code only eager branches call."""
    found = False
    for f in files:
        ranges = skipped.get(f.path, ())
        for node in ast.walk(f.tree):
            if (isinstance(node, ast.Attribute) and node.attr == name) or (
                    isinstance(node, ast.Name) and node.id == name and isinstance(node.ctx, ast.Load)):
                if not any(a <= node.lineno <= b for a, b in ranges):
                    return False
                found = True
    return found


def _blocks(tree: ast.AST) -> Iterator[list[ast.stmt]]:
    for node in ast.walk(tree):
        for field in ("body", "orelse", "finalbody"):
            block = getattr(node, field, None)
            if isinstance(block, list) and block and isinstance(block[0], ast.stmt):
                yield block
