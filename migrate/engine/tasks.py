"""What a run of the engine is asked (:class:`Options`, one :class:`Task` per file) and what it
gives back (a :class:`FileResult` per file, the :class:`Run`)."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from ts2export.rule import Applicability, Finding, ProgramView

if TYPE_CHECKING:  # pragma: no cover - the program model is imported by what builds it, not by readers of results
    from ts2export.model.decision import FileDecision
    from ts2export.model.program import Program


@dataclass
class Options:
    """What a run does. Picklable: sent to worker processes."""

    select: tuple[str, ...] = ()
    ignore: tuple[str, ...] = ()
    fix: str | None = None  # None (report), "safe" or "unsafe"
    rule_options: dict = field(default_factory=dict)
    plan: str = "safe"  # when only checking: the fix mode whose held-back fixes are reported
    external_readers: bool = False  # rewrite readers of artifacts that no file of the run writes
    migrate_unfollowable: bool = False  # let an entry point whose target cannot be followed migrate
    script_wrappers: tuple[str, ...] = ()  # functions of other packages that script or trace their first argument
    recording: str | None = None  # a `ts2export record` recording: the inputs the program was seen using
    exclude_units: tuple[str, ...] = ()  # unit labels (see unit_label) whose fixes are held back

    @property
    def mode(self) -> str:
        return self.fix or self.plan


@dataclass
class FileResult:
    path: str
    findings: list[Finding] = field(default_factory=list)  # left for a person (or not yet fixed)
    fixed: list[Finding] = field(default_factory=list)
    suppressed: int = 0
    error: str | None = None  # the file could not be read/decoded/parsed
    notes: list[str] = field(default_factory=list)  # e.g. fixes dropped because the result did not compile
    original: bytes | None = None
    new: bytes | None = None  # set when fixing changed the file
    cell_starts: tuple = ()  # a notebook's: (first line of a cell in its module, cell number) (engine.notebooks)

    @property
    def changed(self) -> bool:
        return self.new is not None and self.new != self.original


@dataclass(frozen=True, eq=False)
class Task:
    path: str
    kind: str
    ignored: tuple[str, ...] = ()  # per-file ignores
    data: bytes | None = None  # the file's bytes when they do not come from disk (corpus, tests)
    decision: FileDecision | None = None  # what the program model holds back in this file
    view: ProgramView | None = None  # what rules may ask about other files


def mode_allows(applicability: Applicability, mode: str | None) -> bool:
    """Whether a fix of this applicability is written in this fix mode."""
    if applicability is Applicability.SAFE:
        return mode is not None
    return applicability is Applicability.UNSAFE and mode == "unsafe"


def unit_label(path: str, unit: str | None) -> str:
    """The name of the group a fix migrates with: its unit, or, for a fix outside every unit, its
    file (such fixes are independent of each other and of the units)."""
    return unit or f"{path} (fixes outside units)"


@dataclass
class Run:
    """The results of a run, and the program model that decided what to hold back."""

    results: list[FileResult]
    program: Program | None = None
    exempted: list[dict] = field(default_factory=list)  # the decision's (see Decision.exempted)
    replays: list[dict] = field(default_factory=list)  # what replaying their proofs said (engine.replayed)
