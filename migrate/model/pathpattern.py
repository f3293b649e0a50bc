"""Artifact paths as patterns, and whether two of them may name the same file.

A path expression in a program (``"m.pt"``, ``f"{out}/m.pt"``, ``os.path.join(out_dir, "m.pt")``,
``str(Path(out) / "m.pt")``, ``out + "/m.pt"``, a parameter bound at its call sites, ...) is read
as a *pattern*: a tuple of literal pieces and :data:`ANY` (a part that is not known statically).
Two patterns *may match* when some string matches both. Linking a writer and a reader that may
match is the safe direction: a false link holds back a migration; a missed one breaks a program.

A relative path may be read from any working folder, so it also matches any path that ends with
it (``m.pt`` may be ``/tmp/run/m.pt``). In-memory buffers (``io.BytesIO()``) match only
themselves (:mod:`.paths` gives a buffer whose bytes leave torch's hands the pattern of any path).
"""

from __future__ import annotations

import functools
import re

ANY = None  # an unknown part of a path

Pattern = tuple  # of str pieces and ANY

#: More alternatives than this (a path built from many call sites) count as one unknown path.
MAX_ALTERNATIVES = 16


def concat(*patterns: Pattern) -> Pattern:
    return normalize(tuple(p for pattern in patterns for p in pattern))


def join(parts: list[Pattern]) -> Pattern:
    """``os.path.join`` / pathlib ``/``: pieces separated by "/" (an absolute piece restarts)."""
    out: list = []
    for i, part in enumerate(parts):
        if i and not (part and isinstance(part[0], str) and part[0].startswith("/")):
            out.append("/")
        elif i:
            out = []
        out.extend(part)
    return normalize(tuple(out))


def normalize(pattern: Pattern) -> Pattern:
    """Merge adjacent literals and unknowns; use "/" separators; drop "./" segments."""
    merged: list = []
    for piece in pattern:
        if piece is ANY:
            if not merged or merged[-1] is not ANY:
                merged.append(ANY)
            continue
        if not piece:
            continue
        piece = piece.replace("\\", "/")
        if merged and isinstance(merged[-1], str):
            merged[-1] += piece
        else:
            merged.append(piece)
    cleaned = []
    for piece in merged:
        if isinstance(piece, str):
            piece = re.sub(r"/{2,}", "/", piece)
            piece = re.sub(r"(^|/)\./", r"\1", piece)
        cleaned.append(piece)
    return tuple(cleaned)


def buffer(identity: str) -> Pattern:
    """The pattern of an in-memory buffer: matches only itself."""
    return ("\0buffer:" + identity,)


def is_buffer(pattern: Pattern) -> bool:
    return len(pattern) == 1 and isinstance(pattern[0], str) and pattern[0].startswith("\0buffer:")


def _readings(pattern: Pattern) -> list[Pattern]:
    """A relative pattern names the path itself, or the same path under any folder."""
    if is_buffer(pattern) or not pattern or pattern[0] is ANY or pattern[0].startswith("/"):
        return [pattern]
    return [pattern, (ANY, "/", *pattern)]


def _chars(pattern: Pattern) -> tuple:
    out: list = []
    for piece in pattern:
        if piece is ANY:
            out.append(ANY)
        else:
            out.extend(piece)
    return tuple(out)


def may_match(a: Pattern, b: Pattern) -> bool:
    """Whether some path matches both patterns."""
    if is_buffer(a) or is_buffer(b):
        return a == b
    return any(_intersects(_chars(x), _chars(y)) for x in _readings(a) for y in _readings(b))


def _intersects(p: tuple, q: tuple) -> bool:
    """Whether two glob patterns (characters and ANY, which matches any string) share a string."""

    @functools.lru_cache(maxsize=None)
    def go(i: int, j: int) -> bool:
        if i == len(p) and j == len(q):
            return True
        if i < len(p) and p[i] is ANY:
            return go(i + 1, j) or (j < len(q) and go(i, j + 1))
        if j < len(q) and q[j] is ANY:
            return go(i, j + 1) or (i < len(p) and go(i + 1, j))
        return i < len(p) and j < len(q) and p[i] == q[j] and go(i + 1, j + 1)

    return go(0, 0)


def shown(pattern: Pattern) -> str:
    """A pattern as a person reads it: unknown parts as ``*``."""
    if is_buffer(pattern):
        return "an in-memory buffer"
    return "".join("*" if p is ANY else p for p in pattern) or "*"
