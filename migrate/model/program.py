"""The program model of one run: its parts, built in order, each answering one kind of question.

Built once per run from every Python file of the run (the standard library's ``ast``; no libcst),
it knows the TorchScript entry points and the code they compile or trace across files, the
artifacts written and read with their paths, and the migration units; after the rules have
checked every file (the engine's first pass) it decides which fixes to hold back so that no
program breaks. Rules never see it: the engine applies the decision, and gives each rule only a
small per-file view (:class:`ts2export.model.view.ProgramView`). See docs/units.md.
"""

from __future__ import annotations

from typing import Iterable, Sequence

from ts2export.model.calls import Calls
from ts2export.model.classes import Classes
from ts2export.model.decision import Decision, Solver
from ts2export.model.facts import artifact_table, entry_point_table
from ts2export.model.findings import ScanFinding
from ts2export.model.feeding import Feeding
from ts2export.model.files import Files
from ts2export.model.kinds import Kinds
from ts2export.model.links import Links
from ts2export.model.names import Names
from ts2export.model.origins import Origins
from ts2export.model.patched import Patched
from ts2export.model.paths import Paths
from ts2export.model.reach import Reach, recorded_targets
from ts2export.model.scriptuses import ScriptUses
from ts2export.model.shapes import Shapes
from ts2export.model.sites import Sites
from ts2export.model.units import Units
from ts2export.model.values import Values
from ts2export.model.view import ProgramView
from ts2export.model.views import views


class Program:
    """The program model of one run. ``sources`` maps each Python file of the run to its bytes (a
    notebook: its code cells as one module, with ``cells`` giving where each starts, for positions);
    ``recording``: a :class:`ts2export.record.recording.Recording` of what the program was seen doing."""

    def __init__(self, sources: dict[str, bytes], external_readers: bool = False, recording=None,
                 migrate_unfollowable: bool = False, cells: dict[str, tuple] | None = None,
                 script_wrappers: Sequence[str] = ()) -> None:
        self.recording = recording
        self.files = Files(sources, cells)  # each file's index, parsed when first asked for
        self.names = Names(self.files)  # what a name refers to
        self.calls = Calls(self.files, self.names)  # who calls what
        self.values = Values(self.names, self.calls)  # what an expression may evaluate to
        self.paths = Paths(self.names, self.values)  # the artifact paths an expression may name
        self.sites = Sites(self.files, self.names, self.paths, script_wrappers)  # the TorchScript constructs tracked
        self.classes = Classes(self.files, self.names)  # class hierarchies
        self.origins = Origins(self.names, self.values, self.sites, self.classes)  # where an object comes from
        self.kinds = Kinds(self.names, self.values, self.origins)  # module, function or class
        self.reach = Reach(self.files, self.names, self.origins, self.classes,  # what an entry point compiles
                           recorded_targets(recording, self.files, self.calls) if recording is not None else None)
        self.links = Links(self.sites, self.names, self.values, self.origins, self.calls, self.classes)
        self.units = Units(self.sites, self.links, self.origins, self.classes)  # what migrates together
        self.script_uses = ScriptUses(self.files, self.names, self.origins, self.sites, self.classes)  # tests of TorchScript-ness
        self.solver = Solver(self.files, self.sites, self.links, self.units, self.reach, self.script_uses, external_readers,
                             proof_of=_proofs(recording, self.files) if recording is not None else None,
                             migrate_unfollowable=migrate_unfollowable,
                             patched=Patched(self.files, self.names))  # classes patched from outside their body
        self.shapes = Shapes(self.names, self.values)  # the tensors the code builds
        self.feeding = Feeding(self.calls, self.origins, self.shapes)  # what feeds an entry point

    def views(self) -> dict[str, ProgramView]:
        """Per file, what its names are in the run (see :class:`ts2export.model.view.ProgramView`)."""
        return views(self.files, self.names, self.classes, self.sites, self.kinds, self.feeding, self.reach,
                     self.recording)

    def attach(self, findings: Iterable[ScanFinding]) -> None:
        """Give each site the findings of the first pass that report it (units are formed again)."""
        self.solver.attach(findings)

    def solve(self, extra_held: dict[tuple[str, str], str] | None = None) -> Decision:
        """Which fixes to hold back, and why (see :mod:`ts2export.model.decision`)."""
        return self.solver.solve(extra_held)

    def unit_files(self, paths: set[str]) -> set[str]:
        """Files of the readers whose unit has its writer (or its entry point) in ``paths``."""
        return self.units.unit_files(paths)

    def artifact_table(self) -> dict[str, list[dict]]:
        """The artifacts as the reports show them (see :mod:`ts2export.model.facts`)."""
        return artifact_table(self)

    def entry_point_table(self) -> list[dict]:
        """With a recording, the entry points it reached (see :mod:`ts2export.model.facts`)."""
        return entry_point_table(self)


def _proofs(recording, files: Files):
    """The recording's proof of an entry point, with the file its failure names given as the run
    names it (the recording keeps it relative to the folder it was made in)."""

    def proof_of(site):
        proof = recording.proof_at(site.file.path, site.start[0])
        if proof and proof.get("frame"):
            file = proof["frame"][0]
            mine = files.recorded(file, recording.cwd)
            if mine is not None:
                proof = {**proof, "frame": [mine, *proof["frame"][1:]]}
        return proof

    return proof_of
