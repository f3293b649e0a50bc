"""A whole run: every file checked (in worker processes), the program model built meanwhile, its
decision of what to hold back, and, when fixing, the fix pass under that decision."""

from __future__ import annotations

import os
from concurrent.futures import ProcessPoolExecutor
from dataclasses import replace
from pathlib import Path
from typing import Sequence

from ts2export.engine.check import decide, run_one
from ts2export.engine.notebooks import module_bytes, place_findings
from ts2export.engine.replayed import replay_exempted
from ts2export.engine.tasks import FileResult, Options, Run, Task, mode_allows, unit_label
from ts2export.model.decision import Decision
from ts2export.model.findings import ScanFinding
from ts2export.model.program import Program
from ts2export.rule import Applicability


def run(tasks: Sequence[Task], options: Options, jobs: int | None = None, progress=None) -> list[FileResult]:
    """Process files, in parallel where it pays; results sorted by path (see :func:`analyze`)."""
    return analyze(tasks, options, jobs, progress).results


def analyze(tasks: Sequence[Task], options: Options, jobs: int | None = None, progress=None) -> Run:
    """Check every file, build the program model and decide what must be held back so that no
    program breaks; when fixing, fix every file under that decision.

    The first pass checks every file (no fix written). The program model links what it found
    across files and rules (units, code that stays compiled, artifact links) and holds back fixes
    that would break TorchScript code that stays. The second pass fixes the files with fixes to
    write. A fix planned but not applied (its result did not compile, say) holds back what depends
    on it, and the fix pass runs again, at most twice more."""
    with Analysis(tasks, options, jobs, progress) as analysis:
        out = analysis.run(options.exclude_units)
        if options.fix is not None and options.recording and out.exempted:
            # entry points let through although their recorded proof failed (at code a fix
            # rewrites): their proofs run again on the code written, and hold what fails there
            replays = replay_exempted(out, analysis.tasks, options.recording)
            failed = {tuple(r["key"]): r["reason"] for r in replays if r.get("reason")}
            if failed:
                out = analysis.run(options.exclude_units, failed)
            out.replays = replays
        return out


class Analysis:
    """The first pass and the program model of one run, kept for several decisions and fix passes:
    `apply --test` tries many sets of units on one tree, and only what a set changes is redone
    (the decision, and the fix pass of the files whose decision changed). Use as a context manager
    (it holds the worker processes)."""

    def __init__(self, tasks: Sequence[Task], options: Options, jobs: int | None = None, progress=None) -> None:
        self.options = options
        self._workers = _Workers(jobs, len(tasks))
        self._fixed: dict[tuple, FileResult] = {}  # (path, decision) -> the file's fix pass
        self.fix_passes = 0  # files fixed (not found in the cache), for the benchmark
        try:
            self.first, self.tasks, self.program = _first_pass(tasks, options, self._workers, progress)
        except BaseException:
            self.close()
            raise

    def __enter__(self) -> "Analysis":
        return self

    def __exit__(self, *exc) -> None:
        self.close()

    def close(self) -> None:
        self._workers.__exit__(None, None, None)

    def run(self, exclude_units: Sequence[str] = (), held: dict[tuple[str, str], str] | None = None) -> Run:
        """Decide (with ``exclude_units`` rolled back, and the fixes ``held`` names held back:
        (path, anchor) -> why) and, when fixing, fix under that decision."""
        options = replace(self.options, exclude_units=tuple(exclude_units))
        first = [_fresh(r) for r in self.first]  # each run decides its own copy of the findings
        out = _decide_and_fix(first, self.tasks, self.program, options, self._workers, self, held or {})
        place_findings(out.results)
        return out


def _fresh(r: FileResult) -> FileResult:
    return replace(r, findings=[replace(f) for f in r.findings], fixed=[replace(f) for f in r.fixed], notes=list(r.notes))


def _first_pass(tasks: Sequence[Task], options: Options, workers: "_Workers", progress):
    """(first-pass results, tasks with their views, program model or None)."""
    sources, cells = _sources(tasks)
    # A file without `jit` in it gets no program view (see Program.views): its first pass runs in
    # the workers while this process builds the program model.
    early, late = [], []
    for t in tasks:
        (late if t.kind in ("python", "notebook") and b"jit" in sources.get(t.path, b"jit") else early).append(t)
    pending = workers.start(early, replace(options, fix=None), progress)
    program = _program(sources, options, cells)
    views = program.views() if program is not None else {}
    late = [replace(t, view=views.get(t.path)) for t in late]
    first = sorted([*workers.run(late, replace(options, fix=None), progress), *pending()], key=lambda r: r.path)
    if program is not None:
        program.attach(_scan_findings(first, options.mode))
    return first, [*early, *late], program


def _decide_and_fix(first: list[FileResult], tasks: Sequence[Task], program: Program | None, options: Options,
                    workers: "_Workers", analysis: Analysis, held: dict[tuple[str, str], str]) -> Run:
    if program is None:
        return Run(first, None)
    decision = program.solve(held)
    excluded: dict[tuple[str, str], str] = dict(held)
    if options.exclude_units:  # units the caller rolls back (`apply --test`): held, with what depends on them
        for r in first:
            units = decision.units.get(r.path, {})
            for f in r.findings:
                if unit_label(r.path, units.get(f.anchor)) in options.exclude_units and f.anchor:
                    excluded[(r.path, f.anchor)] = "rolled back: the test command failed with this unit applied"
        decision = program.solve(excluded)
    if options.fix is None:
        for r in first:
            d = decision.for_file(r.path)
            for f in r.findings:
                decide(f, d, options.mode)
        if options.mode == "safe":
            _unsafe_holds(first, program, excluded)
        return Run(first, program)
    by_path = {r.path: r for r in first}
    todo = [t for t in tasks if any(mode_allows(f.applicability, options.fix) for f in by_path[t.path].findings)]
    extra: dict[tuple[str, str], str] = dict(excluded)
    results = first
    notes: dict[str, list[str]] = {}  # warnings of every attempt (a dropped fix explains a held unit)
    for _attempt in range(3):
        fixed = {r.path: r for r in _fix(todo, decision, options, workers, analysis)}
        for r in fixed.values():
            kept = notes.setdefault(r.path, [])
            kept.extend(n for n in r.notes if n not in kept)
            r.notes = kept
        results = [fixed.get(r.path, r) for r in first]
        for r in results:
            if r.path not in fixed:
                d = decision.for_file(r.path)
                for f in r.findings:
                    decide(f, d, options.mode)
        missing = _unapplied(results, first, options.fix) - set(extra)
        if not missing:
            break
        extra.update({k: "its fix could not be applied in this run" for k in missing})
        again = program.solve(extra)
        if _same_holds(again, decision, extra):
            break
        decision = again
    return Run(results, program, decision.exempted)


def _unsafe_holds(first: list[FileResult], program: Program, excluded: dict[tuple[str, str], str]) -> None:
    """A report of the safe plan also says which unsafe fixes `apply --unsafe-fixes` would hold back
    (``Finding.held_unsafe``): the count "N more with --unsafe-fixes" is what that command writes.
    The model decides once more with every fix allowed, then goes back to the safe plan."""
    unsafe = [(r, f) for r in first for f in r.findings if f.applicability is Applicability.UNSAFE and not f.held]
    if not unsafe:
        return
    program.attach(_scan_findings(first, "unsafe"))
    try:
        decision = program.solve(excluded)
        for r, f in unsafe:
            probe = replace(f)
            decide(probe, decision.for_file(r.path), "unsafe")
            f.held_unsafe = probe.held
    finally:
        program.attach(_scan_findings(first, "safe"))


def _fix(todo: Sequence[Task], decision: Decision, options: Options, workers: "_Workers", analysis: Analysis) -> list[FileResult]:
    """The fix pass of ``todo`` under ``decision``; a file fixed before under the same decision of
    its own is not fixed again (the fix pass of a file depends on its bytes, view and decision)."""
    keyed = []
    for t in todo:
        d = decision.for_file(t.path)
        keyed.append((t, d, (t.path, _frozen(d.held), _frozen(d.regions), _frozen(d.units), _frozen(d.switched))))
    missing = [replace(t, decision=d) for t, d, key in keyed if key not in analysis._fixed]
    analysis.fix_passes += len(missing)
    done = {r.path: r for r in workers.run(missing, options)}
    for t, _d, key in keyed:
        if t.path in done:
            analysis._fixed[key] = done[t.path]
    return [_fresh(analysis._fixed[key]) for _t, _d, key in keyed]


def _frozen(table: dict) -> tuple:
    return tuple(sorted(table.items()))


def _unapplied(results: Sequence[FileResult], first: Sequence[FileResult], mode: str) -> set[tuple[str, str]]:
    """Fixes the decision let through that are still not applied (their result did not compile,
    say), as keys of the first pass's findings: what depends on them must wait. A finding whose
    code changed since (a fix around it) stands for every finding of its rule in its top-level
    definition."""
    anchors: dict[str, set[str]] = {}  # path -> anchors of the first pass's findings
    by_place: dict[str, dict[tuple, set[str]]] = {}  # path -> (rule, top-level definition) -> anchors
    for r in first:
        anchors[r.path] = {g.anchor for g in r.findings}
        places = by_place[r.path] = {}
        for g in r.findings:
            places.setdefault((g.rule_id, g.defs[-1:]), set()).add(g.anchor)
    out: set[tuple[str, str]] = set()
    for r in results:
        for f in r.findings:
            if f.held or not mode_allows(f.applicability, mode):
                continue
            if f.anchor in anchors.get(r.path, ()):
                out.add((r.path, f.anchor))
            else:
                out.update((r.path, a) for a in by_place.get(r.path, {}).get((f.rule_id, f.defs[-1:]), ()))
    return out


def _sources(tasks: Sequence[Task]) -> tuple[dict[str, bytes], dict[str, tuple]]:
    """The bytes of the run's Python files (those that cannot be read are reported by their own
    check), a notebook's its module; and where each notebook's cells start in its module."""
    sources: dict[str, bytes] = {}
    cells: dict[str, tuple] = {}  # a notebook's: where each cell starts in its module
    for t in tasks:
        if t.kind == "notebook":  # its code cells, as one module (ts2export.engine.notebooks)
            try:
                code = module_bytes(t.data if t.data is not None else Path(t.path).read_bytes())
            except OSError:
                continue
            if code is not None:
                sources[t.path], cells[t.path] = code
            continue
        if t.kind != "python":
            continue
        if t.data is not None:
            sources[t.path] = t.data
            continue
        try:
            sources[t.path] = Path(t.path).read_bytes()
        except OSError:
            continue
    return sources, cells


def _program(sources: dict[str, bytes], options: Options, cells: dict[str, tuple] | None = None) -> Program | None:
    if not sources:
        return None
    recording = None
    if options.recording:
        from ts2export.record.recording import load_recording

        recording = load_recording(options.recording)  # the CLI has checked it loads
    return Program(sources, external_readers=options.external_readers, recording=recording,
                   migrate_unfollowable=options.migrate_unfollowable, cells=cells,
                   script_wrappers=options.script_wrappers)


def _scan_findings(results: Sequence[FileResult], mode: str) -> list[ScanFinding]:
    from ts2export.engine.registry import rule_by_id

    out = []
    for r in results:
        for f in r.findings:
            if not f.anchor:
                continue  # not a Python finding
            rule = rule_by_id(f.rule_id)
            out.append(ScanFinding(
                rule_id=f.rule_id, path=f.path, start=(f.line, f.column - 1), end=(f.end_line, f.end_column - 1),
                anchor=f.anchor, fixable=mode_allows(f.applicability, mode), message=f.message,
                keeps_torchscript=bool(getattr(rule, "keeps_torchscript", False)),
                keeps_tracing=bool(getattr(rule, "keeps_tracing", False)),
                blocks_export=bool(getattr(rule, "blocks_export", False)),
                trace_takes_one_path=bool(getattr(rule, "trace_takes_one_path", False)),
                makes_parameters_leaves=bool(getattr(rule, "makes_parameters_leaves", False)),
                proof_failures=tuple(getattr(rule, "proof_failures", ())),
                export_skips_eager_branch=bool(getattr(rule, "export_skips_eager_branch", False)),
                fix_spans=f.fix_spans, defs=f.defs, alternative_spans=f.alternative_spans,
            ))
    return out


def _same_holds(a: Decision, b: Decision, extra: dict[tuple[str, str], str]) -> bool:
    def held(d: Decision) -> set:
        return {(p, k) for p, table in d.held.items() for k in table if (p, k) not in extra}

    return held(a) == held(b) and a.regions == b.regions and a.switched == b.switched


class _Workers:
    """The processes that check files: started before the program model is built (a small parent
    to fork from, and the first pass of files that need no view overlaps the model's build); none
    for one job or a handful of files. Results come back sorted by path."""

    def __init__(self, jobs: int | None, count: int) -> None:
        jobs = jobs or os.cpu_count() or 1
        self.pool = ProcessPoolExecutor(max_workers=min(jobs, count)) if jobs > 1 and count >= 4 else None
        self.jobs = jobs

    def __enter__(self) -> "_Workers":
        return self

    def __exit__(self, *exc) -> None:
        if self.pool is not None:
            self.pool.shutdown(cancel_futures=True)

    def start(self, tasks: Sequence[Task], options: Options, progress=None):
        """Begin checking ``tasks``; the returned function waits for their results."""
        if self.pool is None or not tasks:
            return lambda: self.run(tasks, options, progress)
        # the largest files first, so that no worker is left with a large file while the others idle
        ordered = sorted(tasks, key=_size, reverse=True)
        chunk = max(1, min(16, len(ordered) // (self.jobs * 16)))  # small chunks: the tail balances
        results = self.pool.map(run_one, [(t, options) for t in ordered], chunksize=chunk)

        def collect() -> list[FileResult]:
            out = []
            for r in results:
                out.append(r)
                if progress:
                    progress()
            out.sort(key=lambda r: r.path)
            return out

        return collect

    def run(self, tasks: Sequence[Task], options: Options, progress=None) -> list[FileResult]:
        if self.pool is not None and len(tasks) >= 4:
            return self.start(tasks, options, progress)()
        results = []
        for t in tasks:
            results.append(run_one((t, options)))
            if progress:
                progress()
        results.sort(key=lambda r: r.path)
        return results


def _size(task: Task) -> int:
    if task.data is not None:
        return len(task.data)
    try:
        return os.stat(task.path).st_size
    except OSError:
        return 0
