"""What the commands read from the program model after a run, without the model itself.

The program model holds every file's syntax tree; the result cache (:mod:`ts2export.engine.cache`) keeps
only these facts of it: the artifact table the reports print and the files each migration unit
links (``check --diff-base`` checks the readers of what a changed file writes).
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


@dataclass(frozen=True)
class ProgramFacts:
    """The artifact table and each unit's (non-reader files, reader files), as one run found them."""

    artifacts: dict
    units: tuple[tuple[frozenset, frozenset], ...]

    @classmethod
    def of(cls, program) -> "ProgramFacts":
        from ts2export.model.sites import READER  # the model's own module: not for a reader of the facts

        units = tuple((frozenset(s.file.path for s in u.sites if s.kind != READER),
                       frozenset(s.file.path for s in u.sites if s.kind == READER)) for u in program.units.all)
        return cls(artifact_table(program), units)

    def artifact_table(self) -> dict[str, list[dict]]:
        return self.artifacts

    def unit_files(self, paths: set[str]) -> set[str]:
        """As :meth:`ts2export.model.units.Units.unit_files`."""
        out: set[str] = set()
        for others, readers in self.units:
            if others & paths:
                out |= readers
        return out - paths
