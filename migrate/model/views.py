"""The per-file views of the program model that rules read (:class:`.view.ProgramView`): what the
names a file uses are in the run, what each script/trace call's object is, what feeds its inputs,
and the recurrent layers it reaches."""

from __future__ import annotations

import ast

from ts2export.model.classes import Classes
from ts2export.model.feeding import Feeding, recorded
from ts2export.model.files import Files
from ts2export.model.kinds import Kinds
from ts2export.model.names import Names
from ts2export.model.pyfile import first_arg
from ts2export.model.reach import Reach
from ts2export.model.sites import ENTRY_SCRIPT, ENTRY_TRACE, READER, WRITER, Sites
from ts2export.model.view import ProgramView, object_key


def views(files: Files, names: Names, classes: Classes, sites: Sites, kinds: Kinds, feeding: Feeding, reach: Reach,
          recording=None) -> dict[str, ProgramView]:
    """Per file that mentions ``jit`` (the files that can ask), its view."""
    out: dict[str, ProgramView] = {}
    for path, f in list(files.parsed.items()):
        if b"jit" not in f.source:
            continue
        named: dict[str, str] = {}
        for node in f.walk():
            if not isinstance(node, (ast.Name, ast.Attribute)):
                continue
            name = names.qualified(f, node)
            if not name or name in named or name.startswith(("torch.", "builtins.")):
                continue
            found = names.lookup_def(name, f.path)
            if found is None:
                continue
            df, d = found
            kind = d.kind
            if kind == "class" and classes.script_module_roots(df, d):
                kind = "script-module-class"
            elif kind == "class" and classes.structured(df, d):
                kind = "structured-class"
            named[name] = kind
            if df is f:
                named.setdefault(d.qualname, kind)
        objects, inputs, recurrent, methods, method_inputs, alone, branches, packed, strings, ragged, guards = (
            {}, {}, {}, {}, {}, set(), {}, {}, {}, {}, {})
        for site in sites.by_file().get(path, ()):
            if site.kind == WRITER and site.unit is not None and any(s.kind == READER for s in site.unit.sites):
                evidence = feeding.reader_evidence(site)
                if evidence is not None:
                    inputs[object_key(site.scope, f.segment(site.node))] = evidence
            if site.kind == ENTRY_SCRIPT and (site.unit is None or all(s.kind == ENTRY_SCRIPT for s in site.unit.sites)):
                alone.add(object_key(site.scope, f.segment(site.node)))
            if site.kind in (ENTRY_SCRIPT, ENTRY_TRACE):
                called = set(feeding.called_methods(site))
                for reader in (s for s in (site.unit.sites if site.unit else ()) if s.kind == READER):
                    called |= feeding.called_methods(reader)
                if called:
                    key = object_key(site.scope, f.segment(site.node))
                    methods[key] = tuple(sorted(called))
                    seen = {m: recorded(recording, site, m) or feeding.evidence(site, m) for m in sorted(called)}
                    method_inputs[key] = {m: ev for m, ev in seen.items() if ev is not None}
                arg = first_arg(site.node, "obj", "func", "mod")
                if arg is not None:
                    objects[object_key(site.scope, f.segment(arg))] = kinds.object_kind(f, arg) or "unknown"
                evidence = recorded(recording, site) or feeding.evidence(site)
                if evidence is not None:
                    inputs[object_key(site.scope, f.segment(site.node))] = evidence
                layers = reach.recurrent_layers(site)
                if layers:
                    recurrent[object_key(site.scope, f.segment(site.node))] = layers
                # what keeps export from taking the module as it is (see ProgramView)
                for table, found in ((branches, reach.size_branches(site)), (packed, reach.packed_sequences(site)),
                                     (strings, reach.string_inputs(site)), (ragged, reach.data_size_decisions(site)),
                                     (guards, reach.scripting_decisions(site) if site.kind == ENTRY_SCRIPT else ())):
                    if found:
                        table[object_key(site.scope, f.segment(site.node))] = found
        out[path] = ProgramView(named, objects, inputs, recurrent, methods, method_inputs, frozenset(alone),
                                size_branches=branches, packed=packed, strings=strings, data_sizes=ragged,
                                scripting=guards,
                                reexports=_reexports(f, names))
    return out


def _reexports(f, names: Names) -> dict[str, str]:
    """The names the file imports from a module of the run that re-exports a library's name
    (``from ..compat import torch``), as libcst spells them (``..compat.torch``), with the
    library's name (``torch``)."""
    out: dict[str, str] = {}
    for node in f.walk():
        if not isinstance(node, ast.ImportFrom) or not (node.level or names.in_run(node.module or "", f.path)):
            continue
        spelled = "." * node.level + (node.module or "")
        base = f.import_base(node)
        for alias in node.names:
            if alias.name == "*":
                continue
            imported = f"{base}.{alias.name}" if base else alias.name
            library = names.library_name(imported, f.path)
            if library != imported:
                out[f"{spelled}{alias.name}" if spelled.endswith(".") else f"{spelled}.{alias.name}"] = library
    return out
