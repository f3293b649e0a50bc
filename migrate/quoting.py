"""Text the tool quotes from the user's code into what it writes: comments in generated code,
finding messages and held-back reasons. Quoted code may span lines and carry comments of its own
(``torch.jit.script(\\n    Kernel(3),  # size\\n)``); where it goes, it must be one line, hold no
comment of its own, and stay short. Every such sink goes through here."""

from __future__ import annotations

import io
import keyword
import re
import tokenize
from typing import TYPE_CHECKING

if TYPE_CHECKING:  # imported where a node is quoted or a comment built: readers of findings need none
    import libcst as cst

#: How many characters of quoted code a comment or message shows before it is cut.
QUOTE_LIMIT = 72
_OPENERS = "([{"
_CLOSERS = ")]},"
_SKIP = {tokenize.COMMENT, tokenize.NL, tokenize.NEWLINE, tokenize.INDENT, tokenize.DEDENT, tokenize.ENDMARKER}
_BREAKS = re.compile(r"\s*[\r\n]+\s*")


def one_line(text: str) -> str:
    """``text`` with its line breaks (and the indentation around them) made single spaces."""
    return _BREAKS.sub(" ", text).strip()


def _tokens_on_one_line(code: str) -> str | None:
    try:
        tokens = [t for t in tokenize.generate_tokens(io.StringIO(code).readline) if t.type not in _SKIP]
    except (tokenize.TokenError, IndentationError, SyntaxError):
        return None
    out: list[str] = []
    levels: list[list] = []  # per open bracket: [is it a tuple's parenthesis, commas so far]
    prev = None
    for i, tok in enumerate(tokens):
        after = tokens[i + 1] if i + 1 < len(tokens) else None
        if tok.string in _OPENERS:
            called = prev is not None and (prev.string in ")]" or (prev.type == tokenize.NAME and not keyword.iskeyword(prev.string)))
            levels.append([tok.string == "(" and not called, 0])
        elif tok.string in ")]}" and levels:
            levels.pop()
        elif tok.string == "," and levels:
            levels[-1][1] += 1
            tuple_of_one = levels[-1][0] and levels[-1][1] == 1
            if after is not None and after.string in ")]}" and after.start[0] != tok.end[0] and not tuple_of_one:
                prev = tok
                continue  # the comma a layout over several lines leaves before its closing bracket
        if prev is not None and out:
            gap = tok.start != prev.end
            broke = tok.start[0] != prev.end[0]
            if gap and not (broke and (prev.string in _OPENERS or tok.string in _CLOSERS)):
                out.append(" ")
        out.append(one_line(tok.string) if tok.type == tokenize.STRING else tok.string)
        prev = tok
    return "".join(out)


def inline(code: str, limit: int | None = QUOTE_LIMIT) -> str:
    """Code as a message or comment quotes it: its comments dropped, on one line (a break inside
    brackets closes up: ``f(\\n  x,\\n)`` is ``f(x)``), cut to ``limit`` characters with ``...``."""
    text = _tokens_on_one_line(code)
    if text is None:
        text = one_line(code)
    if limit is not None and len(text) > limit:
        text = text[: max(limit - 3, 1)].rstrip() + "..."
    return text


def inline_node(node: cst.CSTNode, limit: int | None = QUOTE_LIMIT) -> str:
    """:func:`inline` of a libcst node's code."""
    import libcst as cst

    return inline(cst.Module(body=[]).code_for_node(node), limit)


def comment(text: str) -> cst.Comment:
    """A comment line for generated code: starts with ``#``, one line whatever ``text`` quotes."""
    import libcst as cst

    text = one_line(text)
    if not text.startswith("#"):
        text = "# " + text
    return cst.Comment(text)
