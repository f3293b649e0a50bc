"""The CI gate around the engine: ``check --baseline/--update-baseline/--diff-base``, ``baseline``.

The CLI hands in ``run(paths) -> engine Run`` (its own engine call: results and program model), so
this module never configures the engine itself; it decides which files a run covers and what its
findings mean against a baseline.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable, Optional, Sequence

from ts2export.ci import baseline as bl
from ts2export.ci.changed import ChangedError, changed_files, run_changed, select

Run = Callable[[Optional[list[str]]], "object"]  # -> ts2export.engine.Run (.results, .program)


class GateError(Exception):
    """A user's mistake around the gate (no git, bad baseline, bad config): one line, exit 2."""


def shown(path: Path) -> str:
    """A path as the user will want to read it: relative to the current folder when under it."""
    from ts2export.engine.discovery import display_path

    return display_path(Path(path).absolute()).as_posix()


def _split(values: Optional[Sequence[str]]) -> list[str]:
    return [s.strip() for v in values or [] for s in v.split(",") if s.strip()]


@dataclass
class Gate:
    """The paths, configuration and rule selection of one run."""

    given: list[Path]
    cfg: object  # ts2export.engine.config.Config
    select: list[str]
    ignore: list[str]
    _selected: Optional[set] = field(default=None, repr=False)
    _per_file: list = field(default_factory=list, repr=False)

    @classmethod
    def load(cls, paths: Optional[Sequence[str]], config: Optional[Path], select=None, ignore=None) -> "Gate":
        from ts2export.engine.config import ConfigError, load_config

        given = [Path(p) for p in (paths or ["."])]
        try:
            cfg = load_config(given[0], Path(config) if config else None)
        except ConfigError as exc:
            raise GateError(str(exc)) from None
        return cls(given, cfg, _split(select) or cfg.select, _split(ignore) + cfg.ignore)

    @property
    def root(self) -> Path:
        return self.cfg.root

    def baseline_path(self, explicit: Optional[Path], use_config: bool = True) -> Optional[Path]:
        if explicit is not None:
            return Path(explicit)
        return self.cfg.baseline if use_config else None

    def rule_in_scope(self, rule_id: str, rel_path: str) -> bool:
        """Whether ``rule_id`` ran on the file ``rel_path`` (selection, per-file ignores)."""
        from ts2export.engine.registry import matches_selector, select_rules

        if self._selected is None:
            import pathspec

            self._selected = {r.id for r in select_rules(tuple(self.select), tuple(self.ignore))}
            self._per_file = [(pathspec.GitIgnoreSpec.from_lines([p]), ids) for p, ids in self.cfg.per_file_ignores.items()]
        if rule_id not in self._selected:
            return False
        return not any(spec.match_file(rel_path) and matches_selector(rule_id, ids) for spec, ids in self._per_file)

    def scope(self, results: Sequence, paths: Sequence[Path]) -> bl.Scope:
        unchecked = frozenset(bl.relative_path(r.path, self.root) for r in results if r.error)
        return bl.Scope(tuple(bl.relative_path(p, self.root) for p in paths), self.rule_in_scope, unchecked)

    def fingerprints(self, results: Sequence) -> list:
        return bl.fingerprint_findings([f for r in results for f in r.findings], self.root)


# --------------------------------------------------------------------------------------------
# check


@dataclass
class Outcome:
    results: list  # FileResults, with only the findings that fail the gate
    notes: list[str] = field(default_factory=list)
    program: object = None  # the engine's program model (artifact links for the report)


def _under(path: Path, folders: Sequence[Path]) -> bool:
    path = path.resolve()
    return any(path == g or g in path.parents for g in (f.resolve() for f in folders))


def changed_run(gate: Gate, ref: str, run: Run) -> tuple[list, list[Path], str, object]:
    """Results of the files under the given paths changed against ``ref`` (and the readers they
    affect), the paths that scope baseline entries, and a line saying what was checked."""
    from ts2export.engine.discovery import DiscoveryError, discover

    try:
        changes = changed_files(ref, gate.given[0])
        discovered = [f.path for f in discover(gate.given, gate.root, gate.cfg.exclude)]
    except (ChangedError, DiscoveryError) as exc:
        raise GateError(str(exc)) from None
    changed = select(discovered, changes)
    changed_set = set(changed)
    others = [p for p in discovered if p not in changed_set]
    results, program = run_changed(changed, others, lambda paths: run(paths))
    scoped = [p for p in changes.files if _under(p, gate.given)] + [Path(r.path) for r in results]
    readers = len(results) - len(changed)
    what = f"Checked {len(changed)} file{'s' if len(changed) != 1 else ''} changed against {ref}"
    if readers:
        what += f" and {readers} file{'s' if readers != 1 else ''} reading an artifact they write"
    return results, scoped, what + ".", program


def check(gate: Gate, run: Run, diff_base: Optional[str], baseline_file: Optional[Path], update: bool) -> Outcome:
    """Run the gate: which files (all, or the changed ones), which findings fail it (all, or the new ones)."""
    if update and baseline_file is None:
        raise GateError("--update-baseline needs --baseline FILE (or `baseline` in [tool.ts2export])")
    base = None
    if baseline_file is not None:
        try:
            base = bl.load(baseline_file, shown(baseline_file))
        except bl.BaselineError as exc:
            raise GateError(str(exc)) from None
    notes: list[str] = []
    if diff_base is not None:
        results, scoped, what, program = changed_run(gate, diff_base, run)
        notes.append(what)
    else:
        full = run(None)
        results, scoped, program = full.results, gate.given, full.program
    if base is None:
        return Outcome(results, notes, program)
    comparison = bl.compare(gate.fingerprints(results), base, gate.scope(results, scoped))
    new_ids = {id(f) for f, _ in comparison.new}
    filtered = [dataclasses.replace(r, findings=[f for f in r.findings if id(f) in new_ids]) for r in results]
    notes.append(f"Baseline {shown(baseline_file)}: {len(comparison.known)} known finding{'s' if len(comparison.known) != 1 else ''} "
                 f"not shown, {len(comparison.new)} new.")
    if comparison.gone:
        n = len(comparison.gone)
        notes.append(f"{n} baseline entr{'ies are' if n != 1 else 'y is'} gone (fixed, or the code changed):")
        notes.extend("  " + bl.gone_line(e) for e in comparison.gone)
        if not update:
            notes.append("Tighten the baseline with `ts2export check --baseline FILE --update-baseline`.")
    if update:
        try:
            written = bl.write(baseline_file, comparison.updated())
        except bl.BaselineError as exc:
            raise GateError(str(exc)) from None
        dropped = len(comparison.gone)
        notes.append(f"Baseline {shown(baseline_file)} {'updated' if written else 'unchanged'}: dropped {dropped} gone "
                     f"entr{'ies' if dropped != 1 else 'y'}; new findings are never added (record them with `ts2export baseline`).")
    return Outcome(filtered, notes, program)


# --------------------------------------------------------------------------------------------
# apply


@dataclass
class Known:
    """A loaded baseline, with the run it applies to (for ``apply``'s exit code)."""

    gate: Gate
    path: Path
    baseline: bl.Baseline


def load_baseline(gate: Gate, explicit: Optional[Path], use_config: bool) -> Optional[Known]:
    path = gate.baseline_path(explicit, use_config)
    if path is None:
        return None
    try:
        return Known(gate, path, bl.load(path, shown(path)))
    except bl.BaselineError as exc:
        raise GateError(str(exc)) from None


def new_left(known: Known, results: Sequence) -> tuple[list, str]:
    """The findings left after ``apply`` that are not in the baseline, and a line saying so."""
    fps = known.baseline.fingerprints()
    new = [f for f, e in known.gate.fingerprints(results) if e.fingerprint not in fps]
    left = sum(len(r.findings) for r in results)
    return new, (f"Baseline {shown(known.path)}: {left - len(new)} of the findings left are in it, "
                 f"{len(new)} {'is' if len(new) == 1 else 'are'} new.")


# --------------------------------------------------------------------------------------------
# baseline


def record(gate: Gate, results: Sequence, output: Optional[Path]) -> tuple[Path, str]:
    """Write the baseline of ``results``; entries outside this run's paths and rules are kept."""
    path = Path(output) if output is not None else (gate.cfg.baseline or gate.root / bl.DEFAULT_NAME)
    try:
        old = bl.load(path, shown(path)) if path.exists() else bl.Baseline()
    except bl.BaselineError as exc:
        raise GateError(f"{exc} (remove it or choose another --output)") from None
    current = gate.fingerprints(results)
    comparison = bl.compare(current, old, gate.scope(results, gate.given))
    new = comparison.recorded()
    try:
        bl.write(path, new)
    except bl.BaselineError as exc:
        raise GateError(str(exc)) from None
    n, kept = len(new.entries), len({e.fingerprint for e in comparison.kept} - {e.fingerprint for _, e in current})
    line = f"Recorded {n} finding{'s' if n != 1 else ''} in {shown(path)}"
    if kept:
        line += f" ({kept} of them outside the paths or rules of this run, kept as they were)"
    return path, line + "."


# --------------------------------------------------------------------------------------------
# report


def report_data(gate: Gate, results: Sequence, baseline_file: Optional[Path]):
    """The report's data: every finding, and progress against the baseline when there is one."""
    from ts2export.engine.registry import all_rules
    from ts2export.ci.report import build

    pairs = gate.fingerprints(results)
    comparison = None
    if baseline_file is not None:
        try:
            comparison = bl.compare(pairs, bl.load(baseline_file, shown(baseline_file)), gate.scope(results, gate.given))
        except bl.BaselineError as exc:
            raise GateError(str(exc)) from None
    summaries = {r.id: r.summary for r in all_rules()}
    base = ""
    if len(gate.given) == 1 and gate.given[0].is_dir():
        rel = bl.relative_path(gate.given[0], gate.root)
        base = "" if rel in ("", ".") or rel.startswith("/") else rel
    return build(gate.root.name or str(gate.root), results, pairs, comparison,
                 shown(baseline_file) if baseline_file is not None else None, summaries, base)
