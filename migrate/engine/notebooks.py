"""Jupyter notebooks (``.ipynb``): their code cells, in order, form one Python module that the rules
and the program model see under the notebook's path; fixes to that module are written back into
the cells, and nothing else of the notebook changes.

* IPython magics and shell escapes (a line that starts with ``%``, ``!`` or ``?``, one that assigns
  one (``files = !ls``), a help line ``obj?``, a cell that starts with a cell magic ``%%``) are
  masked before parsing: each such line becomes a placeholder
  comment, restored when the cells are written back. A cell that does not compile even so is left
  out of the module (and is never written).
* Each cell starts after a marker comment line; a finding's line in the module maps to a cell and
  a line in it (:func:`Notebook.place`). After fixes the markers split the module back into cells;
  when a fix took one with it (an unused import removed at the top of a cell), a line alignment of
  the module before and after tells each line's cell.
* The notebook is written back with the ``json`` module with its own indent, key order and
  trailing newline; a notebook that this does not reproduce byte for byte is never rewritten.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field

MARKER = "# ts2export: cell {}"
_MARKER = re.compile(r"^# ts2export: cell (\d+)$")
_PLACEHOLDER = "# ts2export: magic {}"
_PLACEHOLDER_RE = re.compile(r"^(\s*)# ts2export: magic (\d+)$")
_ASSIGNED_MAGIC = re.compile(r"^\s*[A-Za-z_][\w.]*(?:\s*,\s*[A-Za-z_][\w.]*)*\s*=\s*[%!]")  # files = !ls


class NotebookError(Exception):
    """The notebook cannot be read (not JSON, not a notebook) or written back faithfully."""


@dataclass
class Cell:
    number: int  # 1-based, among every cell of the notebook (as Jupyter shows them)
    index: int  # position in the notebook's "cells" list
    text: str  # its source, joined
    masked: str  # its source with magics masked
    magics: list[str] = field(default_factory=list)  # the masked lines, by placeholder number
    error: str | None = None  # why it is left out of the module (it does not compile)


@dataclass
class Notebook:
    doc: dict
    cells: list[Cell]  # the code cells
    indent: int | str | None
    ensure_ascii: bool
    newline: bool = True  # the file ends with a newline
    code: str = ""  # the module: every code cell that compiles, each after its marker
    starts: list[tuple[int, int]] = field(default_factory=list)  # (first line of a cell in the module, cell number)

    def place(self, line: int) -> tuple[int, int]:
        """(cell number, line within the cell) of a line of the module."""
        cell, first = 0, 1
        for start, number in self.starts:
            if start > line:
                break
            cell, first = number, start
        return cell, line - first + 1 if cell else line


def read(data: bytes) -> Notebook:
    try:
        text = data.decode("utf-8")
        doc = json.loads(text)
    except (UnicodeDecodeError, ValueError) as exc:
        raise NotebookError(f"cannot read the notebook: {exc}") from None
    if not isinstance(doc, dict) or not isinstance(doc.get("cells"), list):
        raise NotebookError("cannot read the notebook: no list of cells")
    indent = _indent(text)
    ensure_ascii = text.isascii() and "\\u" in text
    nb = Notebook(doc, [], indent, ensure_ascii, text.endswith("\n"))
    for i, raw in enumerate(doc["cells"]):
        if not isinstance(raw, dict) or raw.get("cell_type") != "code":
            continue
        source = raw.get("source", "")
        src = "".join(source) if isinstance(source, list) else source if isinstance(source, str) else ""
        cell = Cell(number=i + 1, index=i, text=src, masked="")
        cell.masked = _mask(src, cell.magics)
        try:
            compile(cell.masked, f"cell {cell.number}", "exec", dont_inherit=True)
        except SyntaxError as exc:
            cell.error = f"cell {cell.number} not checked: syntax error at line {exc.lineno}: {exc.msg}"
        except (ValueError, MemoryError, RecursionError) as exc:
            cell.error = f"cell {cell.number} not checked: {type(exc).__name__}"
        nb.cells.append(cell)
    lines: list[str] = []
    for cell in nb.cells:
        if cell.error:
            continue
        lines.append(MARKER.format(cell.number) + "\n")
        nb.starts.append((len(lines) + 1, cell.number))
        body = cell.masked if cell.masked.endswith("\n") or not cell.masked else cell.masked + "\n"
        lines.extend(body.splitlines(keepends=True))
    nb.code = "".join(lines)
    return nb


def _indent(text: str) -> int | str | None:
    m = re.match(r"\{\r?\n([ \t]*)\"", text)
    if not m:
        return None
    ws = m.group(1)
    return len(ws) if ws and set(ws) == {" "} else ws


def _mask(src: str, magics: list[str]) -> str:
    """The cell's source with each magic or shell line replaced by a numbered placeholder comment."""
    lines = src.splitlines(keepends=True)
    whole = bool(lines) and lines[0].lstrip().startswith("%%")
    out = []
    for line in lines:
        body = line.rstrip("\r\n")
        stripped = body.lstrip()
        if whole or stripped.startswith(("%", "!", "?")) or _ASSIGNED_MAGIC.match(body) or (
                stripped.endswith("?") and not stripped.startswith("#")):
            indent = body[: len(body) - len(stripped)]
            out.append(indent + _PLACEHOLDER.format(len(magics)) + line[len(body):])
            magics.append(body)
        else:
            out.append(line)
    return "".join(out)


def dumps(nb: Notebook) -> bytes:
    text = json.dumps(nb.doc, indent=nb.indent, ensure_ascii=nb.ensure_ascii)
    return (text + ("\n" if nb.newline else "")).encode("utf-8")


def faithful(nb: Notebook, data: bytes) -> bool:
    """Whether writing the notebook back reproduces its bytes (the condition to rewrite it)."""
    return dumps(nb) == data


def write(nb: Notebook, data: bytes, new_code: str) -> bytes:
    """The notebook's bytes with the module ``new_code`` written back into its cells."""
    parts = _split_by_markers(nb, new_code)
    if parts is None:  # a fix took a marker with it (an import it removed): align the lines instead
        parts = _split_by_alignment(nb, new_code)
    by_number = {c.number: c for c in nb.cells}
    if not faithful(nb, data):
        raise NotebookError("cannot rewrite faithfully: the json module does not reproduce this notebook byte for byte")
    for number, lines in parts.items():
        cell = by_number[number]
        text = "".join(_unmask(line, cell.magics) for line in lines)
        text = text.rstrip("\n") + "\n" * _trailing_newlines(cell.text)  # a cell keeps its own ending
        if text == cell.text:
            continue
        raw = nb.doc["cells"][cell.index]
        if isinstance(raw.get("source"), list):
            raw["source"] = text.splitlines(keepends=True)
        else:
            raw["source"] = text
    return dumps(nb)


def _split_by_markers(nb: Notebook, new_code: str) -> dict[int, list[str]] | None:
    """Each cell's lines of the fixed module, cut at the markers (None: they did not all come back,
    once each and in order). What a fix put before the first marker (an import) is the first cell's."""
    parts: dict[int, list[str]] = {}
    order: list[int] = []
    current: list[str] | None = None
    head: list[str] = []
    for line in new_code.splitlines(keepends=True):
        m = _MARKER.match(line.rstrip("\r\n"))
        if m:
            current = parts.setdefault(int(m.group(1)), [])
            order.append(int(m.group(1)))
            continue
        (head if current is None else current).append(line)
    if order != [c.number for c in nb.cells if not c.error]:
        return None
    if head and order:
        parts[order[0]][:0] = head
    return parts


def _split_by_alignment(nb: Notebook, new_code: str) -> dict[int, list[str]]:
    """Each cell's lines of the fixed module, by a line alignment of the module before and after:
    a line kept or replaced stays in the cell of the line it was; an inserted line goes in the cell
    of the line before it (a marker line belongs to the cell it starts)."""
    import difflib

    old = nb.code.splitlines(keepends=True)
    owner = [0] * len(old)  # the cell of each line of the module as it came
    markers = [start - 2 for start, _n in nb.starts]  # 0-based: each cell's marker line
    for k, (_start, number) in enumerate(nb.starts):
        for i in range(markers[k], markers[k + 1] if k + 1 < len(markers) else len(old)):
            owner[i] = number
    new = new_code.splitlines(keepends=True)
    parts: dict[int, list[str]] = {number: [] for _s, number in nb.starts}
    matcher = difflib.SequenceMatcher(None, old, new, autojunk=False)
    for tag, i1, i2, j1, j2 in matcher.get_opcodes():
        for j in range(j1, j2):
            if tag == "equal":
                i = i1 + (j - j1)
            elif tag == "replace":
                i = min(i1 + (j - j1), i2 - 1)
            elif tag == "insert":
                i = max(i1 - 1, 0)
            else:
                continue
            if owner and not _MARKER.match(new[j].rstrip("\r\n")):
                parts[owner[i]].append(new[j])
    return parts


def _trailing_newlines(text: str) -> int:
    return len(text) - len(text.rstrip("\n"))


def _unmask(line: str, magics: list[str]) -> str:
    body = line.rstrip("\r\n")
    m = _PLACEHOLDER_RE.match(body)
    if not m or int(m.group(2)) >= len(magics):
        return line
    return magics[int(m.group(2))] + line[len(body):]


def module_bytes(data: bytes) -> tuple[bytes, tuple] | None:
    """The module a notebook's code cells form, and where each cell starts in it (None: not a
    notebook that can be read)."""
    try:
        nb = read(data)
    except NotebookError:
        return None
    return nb.code.encode("utf-8"), tuple(nb.starts)


def place_findings(results) -> None:
    """Give the findings of notebooks their cell and their line within it (the program model has
    used the module's lines by then); a notebook's position in what a finding says (``nb.ipynb:12``,
    or ``line 12`` in a finding of the notebook itself) becomes ``nb.ipynb:cell 3:2`` (``cell 3,
    line 2``). Unit labels stay as the program model names them (they identify units)."""
    books = {r.path: Notebook({}, [], None, False, starts=list(r.cell_starts)) for r in results if r.cell_starts}
    if not books:
        return
    at = re.compile(r"(?<![\w/.-])(" + "|".join(re.escape(p) for p in sorted(books, key=len, reverse=True)) + r"):(\d+)\b")

    def cell_at(m: re.Match) -> str:
        cell, line = books[m.group(1)].place(int(m.group(2)))
        return f"{m.group(1)}:cell {cell}:{line}" if cell else m.group(0)

    for r in results:
        nb = books.get(r.path)
        for f in [*r.findings, *r.fixed]:
            for name in ("message", "held", "held_unsafe", "switched"):
                text = getattr(f, name)
                if text and ":" in text:
                    setattr(f, name, at.sub(cell_at, text))
            if nb is None or f.cell is not None:
                continue
            if "line " in f.message:
                f.message = re.sub(r"\bline (\d+)\b", lambda m: "cell {}, line {}".format(*nb.place(int(m.group(1)))), f.message)
            f.cell, f.line = nb.place(f.line)
            if f.end_line:
                cell, end = nb.place(f.end_line)
                f.end_line = end if cell == f.cell else f.line
