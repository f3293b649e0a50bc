"""What the commands read from the program model after a run, without the model itself.

The program model holds every file's syntax tree; the result cache (:mod:`ts2export.engine.cache`) keeps
only these facts of it: the artifact table the reports print, the files each migration unit
links (``check --diff-base`` checks the readers of what a changed file writes), and, with a
recording, which entry points the recorded run reached.
"""

from __future__ import annotations

from dataclasses import dataclass


def artifact_table(program) -> dict[str, list[dict]]:
    """Each artifact path (as a pattern, ``*`` for parts only known at run time) with the writers
    and readers the program model links through it."""
    out: dict[str, list[dict]] = {}
    for shown, sites in program.links.artifacts():
        out[shown] = [{"kind": s.kind, "path": s.file.path, "line": s.start[0], "column": s.start[1] + 1,
                       "code": s.text, "unit": s.unit.label if s.unit else None} for s in sites]
    return out


def entry_point_table(program) -> list[dict]:
    """With a recording: each call of `torch.jit.script` / `trace` / `trace_module` in the run,
    whether the recorded run made it, and the definitions of the run it compiled or traced there
    (None: the recording does not say). Empty without a recording."""
    from ts2export.model.sites import ENTRY_SCRIPT, ENTRY_TRACE  # the model's own: not for a reader of the facts
    from ts2export.model.torchapi import SCRIPT, TRACE, TRACE_MODULE

    recording = program.recording
    if recording is None:
        return []
    out = []
    for path, sites in sorted(program.sites.by_file().items()):
        for s in sites:
            if s.kind not in (ENTRY_SCRIPT, ENTRY_TRACE) or s.api not in (SCRIPT, TRACE, TRACE_MODULE):
                continue  # (a wrapper of another package is recorded where it calls torch.jit)
            reached = bool(recording.sites_at(path, s.start[0]))
            seen = program.reach.recorded(s) if reached else None
            out.append({"path": path, "line": s.start[0], "column": s.start[1] + 1, "code": s.text, "reached": reached,
                        "compiled": sorted(q for _p, q in seen) if seen is not None else None})
    return out


@dataclass(frozen=True)
class ProgramFacts:
    """The artifact table, each unit's (non-reader files, reader files) and, with a recording, the
    entry points it reached, as one run found them."""

    artifacts: dict
    units: tuple[tuple[frozenset, frozenset], ...]
    entry_points: tuple = ()

    @classmethod
    def of(cls, program) -> "ProgramFacts":
        from ts2export.model.sites import READER  # the model's own module: not for a reader of the facts

        units = tuple((frozenset(s.file.path for s in u.sites if s.kind != READER),
                       frozenset(s.file.path for s in u.sites if s.kind == READER)) for u in program.units.all)
        return cls(artifact_table(program), units, tuple(entry_point_table(program)))

    def artifact_table(self) -> dict[str, list[dict]]:
        return self.artifacts

    def entry_point_table(self) -> list[dict]:
        return list(self.entry_points)

    def unit_files(self, paths: set[str]) -> set[str]:
        """As :meth:`ts2export.model.units.Units.unit_files`."""
        out: set[str] = set()
        for others, readers in self.units:
            if others & paths:
                out |= readers
        return out - paths
