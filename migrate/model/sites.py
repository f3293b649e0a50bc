"""The TorchScript constructs the program model tracks (*sites*), and the units they form: entry points (script, trace,
``@torch.jit.script``, ``script_if_tracing``, ``ScriptModule`` subclasses), artifact writers and
readers with the paths they name, and the calls that transform a module (freeze,
optimize_for_inference, optimize_for_mobile)."""

from __future__ import annotations

import ast
from dataclasses import dataclass, field
from typing import Sequence

from ts2export.model import pathpattern as ap
from ts2export.model.files import Files
from ts2export.model.findings import ScanFinding
from ts2export.model.names import Names
from ts2export.model.paths import Paths
from ts2export.model.pyfile import Def, Pos, PyFile, first_arg
from ts2export.model.torchapi import (
    JIT_LOAD, JIT_SAVE, LIBRARY_SCRIPTS, LITE_LOADS, PASS_THROUGH, SAVE_KEYWORDS, SAVE_METHODS, SCRIPT, SCRIPT_IF_TRACING, SCRIPT_MODULES,
    TRACE, TRACE_MODULE,
)

# Site kinds
ENTRY_SCRIPT, ENTRY_TRACE = "script", "trace"
ENTRY_DECORATOR, ENTRY_IF_TRACING, ENTRY_CLASS = "script-decorator", "script-if-tracing", "script-module-class"
WRITER, READER = "writer", "reader"
TRANSFORM = "transform"  # freeze / optimize_for_inference / optimize_for_mobile of a module
#: Kinds whose call is rewritten into something that TorchScript code around it cannot use.
CALL_SITES = {ENTRY_SCRIPT, ENTRY_TRACE, WRITER, READER}
#: Kinds that make TorchScript compile code (the rest trace it).
COMPILERS = {ENTRY_SCRIPT, ENTRY_DECORATOR, ENTRY_IF_TRACING, ENTRY_CLASS}


@dataclass(eq=False)
class Site:
    """One TorchScript construct the model tracks."""

    kind: str
    file: PyFile
    node: ast.AST
    start: Pos
    end: Pos
    scope: str  # qualname of the enclosing definition ("" at module level)
    text: str
    api: str = ""  # the TorchScript function called (or "method .save")
    findings: list[ScanFinding] = field(default_factory=list)
    patterns: list[ap.Pattern] = field(default_factory=list)  # writers and readers
    unit: "Unit | None" = None
    writes_lite: bool = False

    @property
    def where(self) -> str:
        return self.file.where(self.start[0])

    def describe(self) -> str:
        if self.kind in (ENTRY_DECORATOR, ENTRY_IF_TRACING):
            return f"`@{self.text}` on `{self.scope}` at {self.where}"
        return f"`{self.text}` at {self.where}"


@dataclass(eq=False)
class Unit:
    """Sites that migrate together or not at all (formed by :class:`ts2export.model.units.Units`)."""

    sites: list[Site] = field(default_factory=list)
    label: str = ""


class Sites:
    """Every site of the run, found in the files that can hold one."""

    def __init__(self, files: Files, names: Names, paths: Paths, wrappers: Sequence[str] = ()) -> None:
        self.files = files
        self.names = names
        self.paths = paths
        # functions that script their first argument: libraries' (LIBRARY_SCRIPTS) and those the
        # configuration names (`script-wrappers`)
        self.wrappers = frozenset(LIBRARY_SCRIPTS) | frozenset(wrappers)
        self._wrapper_words = tuple({w.rsplit(".", 1)[-1].encode() for w in wrappers})
        self.all: list[Site] = []
        self._by_file: dict[str, list[Site]] | None = None
        self._by_file_count = 0
        for path, data in files.sources.items():
            if self._may_hold_sites(path, data):
                f = files.file(path)
                if f is not None:
                    self._find_sites(f)

    def _may_hold_sites(self, path: str, data: bytes) -> bool:
        """Whether a file can hold a site (see :meth:`_find_sites`), from its bytes: the other
        files are parsed only when a question needs them (a call of a compiled class, a
        definition), which keeps a large tree's memory and time to the files that matter.

        A site is a call or decorator whose name :meth:`Names.qualified` resolves to one of
        TorchScript's entry points (all under ``torch.jit``, and ``torch.utils.mobile_optimizer``),
        or a method named ``save``/``_save_for_lite_interpreter``. That name is an import's target
        or the file's own module plus what the file writes, so the file's text names ``jit``,
        ``mobile_optimizer`` or ``optimize_for_mobile`` (or ``save``), except where a relative
        import or a local definition supplies the package: in a module of ``torch.jit`` itself."""
        return (b"jit" in data or b"save" in data or b"mobile_optimizer" in data or b"optimize_for_mobile" in data
                or self.files.module_names[path].startswith("torch.jit") or any(w in data for w in self._wrapper_words))

    def _find_sites(self, f: PyFile) -> None:
        for node in f.walk():
            if isinstance(node, ast.Call):
                self._call_site(f, node)
            elif isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
                for dec in node.decorator_list:
                    target = dec.func if isinstance(dec, ast.Call) else dec
                    name = self.names.qualified(f, target)
                    if name == SCRIPT:
                        self._add(ENTRY_DECORATOR, f, dec, name)
                    elif name == SCRIPT_IF_TRACING:
                        self._add(ENTRY_IF_TRACING, f, dec, name)
                if isinstance(node, ast.ClassDef):
                    for base in node.bases:
                        if self.names.qualified(f, base) in SCRIPT_MODULES:
                            self._add(ENTRY_CLASS, f, base, "torch.jit.ScriptModule")

    def _add(self, kind: str, f: PyFile, node: ast.AST, api: str) -> Site:
        start, end = f.start(node), f.end(node)
        d = f.innermost_def(start)
        site = Site(kind, f, node, start, end, d.qualname if d else "", f.text(node), api)
        self.all.append(site)
        return site

    def _call_site(self, f: PyFile, node: ast.Call) -> None:
        name = self.names.qualified(f, node.func)
        if name == SCRIPT or name in self.wrappers:
            self._add(ENTRY_SCRIPT, f, node, name)
        elif name in (TRACE, TRACE_MODULE):
            self._add(ENTRY_TRACE, f, node, name)
        elif name == JIT_LOAD or name in LITE_LOADS:
            site = self._add(READER, f, node, name)
            site.patterns = self.paths.patterns(f, first_arg(node, "f"))
        elif name in PASS_THROUGH:
            self._add(TRANSFORM, f, node, name)
        elif name == JIT_SAVE:
            site = self._add(WRITER, f, node, name)
            site.patterns = self.paths.patterns(f, _arg(node, 1, "f"))
        elif isinstance(node.func, ast.Attribute) and node.func.attr in SAVE_METHODS and name is None \
                and all(k.arg is None or k.arg in SAVE_KEYWORDS for k in node.keywords):
            # a method of an object (`torch.save`, `np.save` are functions of modules: not ours)
            site = self._add(WRITER, f, node, "." + node.func.attr)
            site.writes_lite = SAVE_METHODS[node.func.attr] == "lite-save"
            path = first_arg(node, "f") if node.func.attr != "_save_to_buffer_for_lite_interpreter" else None
            site.patterns = self.paths.patterns(f, path) if path is not None else [ap.buffer(f"{f.path}:{node.lineno}")]

    def at(self, f: PyFile, node: ast.AST) -> Site | None:
        """The site whose node is ``node`` (or spans exactly what it spans), if any."""
        start = f.start(node) if hasattr(node, "lineno") else None
        for s in self.by_file().get(f.path, ()):
            if s.node is node or (start is not None and s.start == start and s.end == f.end(node) and s.kind != WRITER):
                return s
        return None

    def decorator(self, f: PyFile, d: Def) -> Site | None:
        """The ``@torch.jit.script`` site on definition ``d``, if it has one."""
        for s in self.by_file().get(f.path, ()):
            if s.kind == ENTRY_DECORATOR and d.contains(s.start) and d.start <= s.start < (d.node.lineno, 0):
                return s
        return None

    def by_file(self) -> dict[str, list[Site]]:
        if self._by_file is None or self._by_file_count != len(self.all):
            self._by_file = {}
            for s in self.all:
                self._by_file.setdefault(s.file.path, []).append(s)
            self._by_file_count = len(self.all)
        return self._by_file


def _arg(call: ast.Call, index: int, keyword: str) -> ast.AST | None:
    for k in call.keywords:
        if k.arg == keyword:
            return k.value
    positional = [a for a in call.args if not isinstance(a, ast.Starred)]
    return positional[index] if len(positional) > index else None
