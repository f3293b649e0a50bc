"""C++ scanning helpers for the TSX8xx text rules (not a rule module)."""

from __future__ import annotations

import re
from typing import Iterator

_RAW = re.compile(r'R"([^()\\\s]{0,16})\(')


def mask(text: str) -> str:
    """``text`` with comments and string/character literals blanked out (newlines kept), so that
    offsets, lines and columns stay those of the original."""
    out = list(text)
    i, n = 0, len(text)

    def blank(a: int, b: int) -> None:
        for k in range(a, min(b, n)):
            if out[k] != "\n":
                out[k] = " "

    while i < n:
        c = text[i]
        if c == "/" and text.startswith("//", i):
            j = text.find("\n", i)
            j = n if j < 0 else j
            blank(i, j)
            i = j
        elif c == "/" and text.startswith("/*", i):
            j = text.find("*/", i + 2)
            j = n if j < 0 else j + 2
            blank(i, j)
            i = j
        elif c == "R" and (m := _RAW.match(text, i)) and (i == 0 or not (text[i - 1].isalnum() or text[i - 1] == "_")):
            end = text.find(")" + m.group(1) + '"', m.end())
            j = n if end < 0 else end + len(m.group(1)) + 2
            blank(i + 1, j)
            i = j
        elif c in "\"'":
            if c == "'" and i > 0 and text[i - 1].isalnum():  # digit separator 1'000
                i += 1
                continue
            j = i + 1
            while j < n and text[j] != c and text[j] != "\n":
                j += 2 if text[j] == "\\" else 1
            blank(i + 1, j)
            i = j + 1
        else:
            i += 1
    return "".join(out)


def findings(text: str, pattern: re.Pattern[str], masked: str | None = None) -> Iterator[tuple[int, int, re.Match[str]]]:
    """(line, column, match) of each match of ``pattern`` in the code of ``text`` (1-based)."""
    code = mask(text) if masked is None else masked
    for m in pattern.finditer(code):
        line = code.count("\n", 0, m.start()) + 1
        column = m.start() - (code.rfind("\n", 0, m.start()) + 1) + 1
        yield line, column, m
