"""The files of a run: their module names, and each one's index (:mod:`.pyfile`) parsed when first
asked for.

A large tree holds far more files than any question needs: a file is parsed (with ``ast``) the
first time a question reaches it, and kept. Module names come from each file's absolute path
(its folders up to the topmost package), so they do not depend on the current folder.
"""

from __future__ import annotations

import os
import re
from typing import Iterator

from ts2export.model.pyfile import Def, PyFile, module_name


class Files:
    """``sources`` maps each Python file of the run to its bytes."""

    def __init__(self, sources: dict[str, bytes], cells: dict[str, tuple] | None = None) -> None:
        self.sources = sources
        self.cells = cells or {}  # a notebook's: (first line of a cell in its module, cell number)
        self.parsed: dict[str, PyFile] = {}  # in the order they were first asked for
        self.broken: dict[str, str] = {}  # files that ast could not read
        self._aliases: dict[bytes, set[bytes]] = {}  # see _spellings
        self._pairs: dict[bytes, list[bytes]] | None = None  # see _as_pairs
        self._naming: dict[tuple, list[str]] = {}  # naming's answers: the paths, in the run's order
        inits = {os.path.dirname(os.path.abspath(p)) for p in sources if os.path.basename(p) == "__init__.py"}

        def has_init(folder: str) -> bool:
            return folder in inits or os.path.isfile(os.path.join(folder, "__init__.py"))

        # A notebook's code cells (given as one module under its path) cannot be imported: a name no
        # import statement spells, so that `import train` finds train.py and never train.ipynb.
        self.module_names = {path: f"<notebook {os.path.basename(path)}>" if path.lower().endswith(".ipynb")
                             else module_name(path, has_init) for path in sources}
        self._by_abspath = {os.path.abspath(path): path for path in sources}
        self.modules: dict[str, list[str]] = {}
        for path, name in self.module_names.items():
            self.modules.setdefault(name, []).append(path)

    def recorded(self, path: str, cwd) -> str | None:
        """The file of the run that a recording names ``path`` (relative to the folder ``cwd`` it
        was made in, or absolute), as the run names it; None: not a file of the run."""
        if path in self.sources:
            return path
        return self._by_abspath.get(os.path.normpath(os.path.abspath(os.path.join(str(cwd), path))))

    def file(self, path: str) -> PyFile | None:
        """The index of ``path`` (None: not a file of the run, or one that does not parse)."""
        if path in self.parsed:
            return self.parsed[path]
        if path in self.broken or path not in self.sources:
            return None
        try:
            f = PyFile(path, self.sources[path], self.module_names[path])
        except (SyntaxError, ValueError, RecursionError, MemoryError) as exc:
            self.broken[path] = str(exc)
            return None
        f.cells = self.cells.get(path, ())
        self.parsed[path] = f
        return f

    def functions(self, defs) -> Iterator[tuple[str, PyFile, Def]]:
        """The functions and methods among ``(path, qualname)`` pairs (what an entry point
        reaches), in a stable order: ``(path, file, definition)``."""
        for path, qualname in sorted(defs):
            f = self.file(path)
            d = f.def_by_qualname.get(qualname) if f is not None else None
            if d is not None and d.kind == "function":
                yield path, f, d

    def module_paths(self, name: str, near: str | None = None) -> list[str]:
        """The run's files of module ``name``. Failing that, as Python finds a module when a script
        runs (its own folder is on ``sys.path``): the file of that name beside ``near``
        (``from export import export`` in a script of a folder that is also a package, whose files
        are named ``pkg.export``)."""
        paths = self.modules.get(name)
        if paths or near is None or not name:
            return paths or []
        base = os.path.join(os.path.dirname(os.path.abspath(near)), *name.split("."))
        return [p for p in (self._by_abspath.get(base + ".py"), self._by_abspath.get(os.path.join(base, "__init__.py")))
                if p is not None][:1]

    def module_file(self, name: str, near: str | None = None) -> PyFile | None:
        paths = self.module_paths(name, near)
        if not paths:
            return None
        if near is not None and len(paths) > 1:
            folder = os.path.dirname(near)
            paths = sorted(paths, key=lambda p: os.path.dirname(p) != folder)
        return self.file(paths[0])

    def naming(self, name: bytes, required: bytes | None = None) -> Iterator[PyFile]:
        """The files that may refer to ``name``: whose text has it as a word, or a name it is
        imported as (``from m import name as other``, followed from file to file until no new name
        turns up), and ``required`` as a word too when given; in the run's order, each parsed when
        it is reached. (A substring test made a query for `main` parse most of a large package.)"""
        paths = self._naming.get((name, required))
        if paths is None:  # each question once: the sources never change in a run (`calls_of` asks
            # about `forward` or `__init__` again and again, and a word search of a large package
            # took most of the model's build over the whole torch tree)
            names = self._spellings(name)
            need = _word(required) if required is not None else None
            paths = self._naming[(name, required)] = [
                path for path, data in self.sources.items()
                if any(n in data for n in names)  # cheap first: most files hold none of the bytes
                and any(_word(n).search(data) for n in names) and (need is None or need.search(data))]
        for path in paths:
            f = self.file(path)
            if f is not None:
                yield f

    def _spellings(self, name: bytes) -> set[bytes]:
        """``name`` and the names it is imported as anywhere in the run (see :meth:`naming`)."""
        known = self._aliases.get(name)
        if known is not None:
            return known
        pairs = self._as_pairs()
        names, todo = {name}, [name]
        while todo:
            n = todo.pop()
            if _IDENTIFIER.fullmatch(n):
                found = pairs.get(n, ())
            else:  # a dotted name (`a.b as c`): the text itself
                alias = re.compile(rb"\b" + re.escape(n) + rb"\s+as\s+(\w+)")
                found = [m.group(1) for data in self.sources.values() if n in data for m in alias.finditer(data)]
            for other in found:
                if other not in names:
                    names.add(other)
                    todo.append(other)
        self._aliases[name] = names
        return names

    def _as_pairs(self) -> dict[bytes, list[bytes]]:
        """Each word of the run's text followed by ``as <word>`` -> those words, in the order of
        the text: one pass over the run for every name :meth:`_spellings` is asked about (a pass
        per name cost most of the program model's build over a large package)."""
        if self._pairs is None:
            self._pairs = {}
            for data in self.sources.values():
                if b"as" not in data:
                    continue
                for m in _AS.finditer(data):
                    self._pairs.setdefault(m.group(1), []).append(m.group(2))
        return self._pairs


# `\bname\s+as\s+(\w+)` for every word at once; the lookahead lets matches overlap (`a as b as c`)
_AS = re.compile(rb"(?<!\w)(\w+)(?=\s+as\s+(\w+))")
_IDENTIFIER = re.compile(rb"\w+")


def _word(name: bytes) -> "re.Pattern[bytes]":
    """``name`` as a whole word (an identifier, an attribute, a string's content)."""
    found = _WORDS.get(name)
    if found is None:
        found = _WORDS[name] = re.compile(rb"(?<![\w])" + re.escape(name) + rb"(?![\w])")
    return found


_WORDS: dict[bytes, "re.Pattern[bytes]"] = {}
