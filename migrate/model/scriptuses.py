"""Uses of a value that only a TorchScript value has: ``isinstance(m, torch.jit.ScriptModule)``,
``m.code``, ``m.graph``, ``m._c``, ``m.original_name``, ... A test that checks what a scripted or
loaded module is (its type, its TorchScript code or graph) passes on the TorchScript value and
fails on the exported one: such a use belongs to the unit of the site that made the value, and
holds it back while it is there.

The uses are looked for in the files the model has parsed up front (those that mention ``jit`` or
``save``: a test that checks TorchScript types names ``torch.jit``), and followed to their sites
through :mod:`.origins` (a value returned by a helper, assigned, passed along).
"""

from __future__ import annotations

import ast
from dataclasses import dataclass

from ts2export.model.classes import Classes
from ts2export.model.files import Files
from ts2export.model.names import Names
from ts2export.model.origins import Origins
from ts2export.model.pyfile import PyFile
from ts2export.model.sites import ENTRY_CLASS, ENTRY_DECORATOR, ENTRY_SCRIPT, ENTRY_TRACE, READER, Site, Sites

#: Types only a TorchScript value is an instance of.
SCRIPT_TYPES = {"torch.jit.ScriptModule", "torch.jit.RecursiveScriptModule", "torch.jit.ScriptFunction",
                "torch.jit.TracedModule", "torch.jit.TopLevelTracedModule", "torch.jit._script.ScriptModule",
                "torch.jit._script.RecursiveScriptModule", "torch.jit._trace.TracedModule",
                "torch.jit._trace.TopLevelTracedModule", "torch._C.ScriptModule", "torch._C.ScriptFunction",
                "torch._C.ScriptMethod", "torch.jit.ScriptFunction", "torch.jit.mobile.LiteScriptModule"}
#: Attributes only a TorchScript module or function has (or that read its TorchScript code).
SCRIPT_ATTRIBUTES = {"code", "graph", "inlined_graph", "code_with_constants", "_c", "original_name", "define",
                     "graph_for", "get_debug_state", "_method_names", "save_to_buffer"}


@dataclass(frozen=True)
class ScriptUse:
    """One use of a TorchScript value that an exported one would fail."""

    file: PyFile
    node: ast.AST

    @property
    def where(self) -> str:
        return f"{self.file.path}:{self.node.lineno}"

    @property
    def text(self) -> str:
        return self.file.text(self.node)


class ScriptUses:
    """The TorchScript-only uses of each site's value (found once, from the files parsed up front)."""

    def __init__(self, files: Files, names: Names, origins: Origins, sites: Sites, classes: Classes) -> None:
        self.names = names
        self.origins = origins
        self.sites = sites
        self.classes = classes
        self._of: dict[int, list[ScriptUse]] = {}  # id(site) -> its uses
        for f in list(files.parsed.values()):
            for node, value in self._candidates(f):
                for site in self._sites_of(f, value):
                    self._of.setdefault(id(site), []).append(ScriptUse(f, node))

    def of(self, site: Site) -> list[ScriptUse]:
        return self._of.get(id(site), [])

    def _candidates(self, f: PyFile):
        """(use, the value it is a use of) for each `isinstance(v, <TorchScript type>)` and
        `v.<TorchScript attribute>` of the file."""
        for node in f.walk():
            if isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id in ("isinstance", "issubclass") \
                    and len(node.args) == 2:
                types = node.args[1].elts if isinstance(node.args[1], ast.Tuple) else [node.args[1]]
                if any(self.names.qualified(f, t) in SCRIPT_TYPES for t in types):
                    yield node, node.args[0]
            elif isinstance(node, ast.Attribute) and node.attr in SCRIPT_ATTRIBUTES and isinstance(node.ctx, ast.Load) \
                    and isinstance(node.value, (ast.Name, ast.Attribute, ast.Call)):
                yield node, node.value

    def _sites_of(self, f: PyFile, value: ast.AST) -> list[Site]:
        """The sites whose value ``value`` may be: a script, trace or load, a scripted function, an
        instance of a ScriptModule subclass."""
        if isinstance(value, ast.Call) and isinstance(value.func, ast.Attribute) and value.func.attr == "forward":
            value = value.func.value  # `m.forward.graph`
        out = []
        for o in self.origins.origins(f, value):
            if isinstance(o, Site) and o.kind in (ENTRY_SCRIPT, ENTRY_TRACE, READER, ENTRY_DECORATOR):
                out.append(o)
            elif isinstance(o, tuple) and o[0] == "instance":
                roots = set(self.classes.script_module_roots(o[1], o[2]))
                out.extend(s for s in self.sites.all if s.kind == ENTRY_CLASS
                           and (s.file.path, s.scope) in roots)
        return out
