"""Migration units: sets of sites that must migrate together or not at all.

A unit is an entry point with the writers that save its value, the readers whose path may match
a writer's (and what those readers save again), the ScriptModule classes whose instances they
save, the sites whose values become part of one another (:mod:`.links`), and the sites one fix
rewrites together.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Iterable

from ts2export.model.classes import Classes
from ts2export.model.findings import ScanFinding
from ts2export.model.links import Links
from ts2export.model.origins import Origins
from ts2export.model.pyfile import first_arg
from ts2export.model.values import UNKNOWN
from ts2export.model.sites import ENTRY_CLASS, ENTRY_SCRIPT, ENTRY_TRACE, READER, TRANSFORM, Site, Sites, Unit


@dataclass(eq=False)
class Units:
    sites: Sites
    links: Links
    origins: Origins
    classes: Classes
    all: list[Unit] = field(default_factory=list, init=False)

    def __post_init__(self) -> None:
        self.form(())

    def form(self, findings: Iterable[ScanFinding]) -> None:
        """Units: an entry point with the writers of its value, the readers of their paths, and
        the ScriptModule classes whose instances they save (only TorchScript writers count)."""
        parent: dict[int, Site] = {id(s): s for s in self.sites.all}

        def find(s: Site) -> Site:
            while parent[id(s)] is not s:
                s = parent[id(s)]
            return s

        def union(a: Site, b: Site) -> None:
            ra, rb = find(a), find(b)
            if ra is not rb:
                parent[id(rb)] = ra

        classes = {(s.file.path, s.file.innermost_def(s.start).qualname): s for s in self.sites.all
                   if s.kind == ENTRY_CLASS and s.file.innermost_def(s.start) is not None}
        writers = {id(s) for s in self.sites.all if self.links.is_writer(s)}
        for s in self.sites.all:
            if s.kind == TRANSFORM:
                arg = first_arg(s.node, "mod", "module", "script_module")
                found = self.origins.origins(s.file, arg) if arg is not None else []
                for o in found:
                    if isinstance(o, Site):
                        union(s, o)
                for o in self.links.stored_as(s.file, arg, found):  # `freeze(model.proj)`
                    union(s, o)
            if id(s) not in writers:
                continue
            for o in self.links.stored_as(s.file, self.links.receivers.get(id(s)), self.links.writer_origins[id(s)]):
                union(s, o)  # `model.proj.save(p)`, `proj` stored by a script in the model's class
            for o in self.links.writer_origins[id(s)]:
                if o is UNKNOWN:
                    # it saves a value that cannot be followed back (passed through a container, a
                    # function of another package...): it may be what a trace of its file made, and a
                    # save left TorchScript must not get the exported module (issue 32)
                    for e in self.sites.by_file().get(s.file.path, ()):
                        if e.kind == ENTRY_TRACE:
                            union(s, e)
                elif isinstance(o, Site):
                    union(s, o)
                elif isinstance(o, tuple) and o[0] == "instance":
                    for cls in self.classes.script_module_roots(o[1], o[2]):
                        if cls in classes:
                            union(s, classes[cls])
            for r in self.links.links.get(id(s), ()):
                union(r, s)
        for a, b in self.links.value_links():
            union(a, b)
        for fi in findings:  # sites rewritten by one fix go together
            if not fi.fix_spans:
                continue
            own = [s for s in self.sites.by_file().get(fi.path, ()) if fi in s.findings]
            for s in self.sites.by_file().get(fi.path, ()):
                if covers(fi, s):
                    for o in own:
                        union(o, s)
        units: dict[int, Unit] = {}
        for s in self.sites.all:
            unit = units.setdefault(id(find(s)), Unit())
            unit.sites.append(s)
            s.unit = unit
        for unit in units.values():
            unit.sites.sort(key=lambda s: (s.file.path, s.start))
            first = next((s for s in unit.sites if s.kind in (ENTRY_SCRIPT, ENTRY_TRACE, ENTRY_CLASS)), unit.sites[0])
            unit.label = f"{first.where} {first.text}"
        self.all = list(units.values())

    def unit_files(self, paths: set[str]) -> set[str]:
        """Files of the readers whose unit has its writer (or its entry point) in ``paths``: what a
        change of those files can break elsewhere."""
        out: set[str] = set()
        for unit in self.all:
            if any(s.kind != READER and s.file.path in paths for s in unit.sites):
                out |= {s.file.path for s in unit.sites if s.kind == READER}
        return out - paths


def covers(fi: ScanFinding, s: Site) -> bool:
    """Whether the fix of ``fi`` rewrites the site (replaces code around it without keeping it)."""
    text = re.sub(r"\s+", "", s.file.segment(s.node))
    return any(a <= s.start and s.end <= b and text not in code for a, b, code in fi.fix_spans)
