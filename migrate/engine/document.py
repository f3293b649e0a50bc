"""One document checked in memory, as an editor holds it (``ts2export server``): its findings under
the program model's decision, and its text with all of its fixes of a mode or with only some of
them (a quick fix). The program model is built from the document alone: the run is one file."""

from __future__ import annotations

from dataclasses import replace
from typing import Collection

from ts2export.engine.check import process_bytes
from ts2export.engine.analysis import Analysis, analyze
from ts2export.engine.tasks import FileResult, Options, Task

#: The reason given to the fixes a quick fix leaves alone (never shown: they are not written).
_NOT_ASKED = "not part of this quick fix"


def check_document(task: Task, options: Options) -> FileResult:
    """The findings of ``task`` (its ``data``), each with why its fix is held back, if it is."""
    return analyze([task], replace(options, fix=None), jobs=1).results[0]


def fix_document(task: Task, options: Options, mode: str, anchors: Collection[str] | None = None) -> FileResult:
    """The document's bytes with its fixes of ``mode`` ("safe" or "unsafe") written, as `apply` would
    write them (the program model's holds kept); with ``anchors``, only the fixes of those findings,
    of the other findings of their units, and those their own rewrite makes possible. None when
    nothing changes. The result's ``new`` is the fixed bytes (None: nothing changed), ``fixed`` the
    findings whose fixes were written."""
    if anchors is None:
        return analyze([task], replace(options, fix=mode), jobs=1).results[0]
    with Analysis([task], replace(options, fix=None, plan=mode), jobs=1) as analysis:
        first, (viewed,), program = analysis.first[0], analysis.tasks, analysis.program
        if program is None:
            return FileResult(task.path)
        decision = program.solve().for_file(task.path)
    # a fix migrates with its unit (docs/units.md): the fixes of the units asked for come along
    units = {decision.units.get(a) for a in anchors} - {None}
    wanted = set(anchors) | {a for a, unit in decision.units.items() if unit in units}
    others = {f.anchor: _NOT_ASKED for f in first.findings if f.anchor and f.anchor not in wanted}
    decision = replace(decision, held={**others, **decision.held})
    return process_bytes(task.data or b"", replace(viewed, decision=decision), replace(options, fix=mode))
