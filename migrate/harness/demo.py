"""The first thing a newcomer runs (``bash scripts/demo.sh``): ``apply --unsafe-fixes`` over every
program of the bundled corpus, in memory (nothing is written but the report), told in a page:

* what was found, per rule, and what ``apply --unsafe-fixes`` fixes, holds back or leaves;
* what is held back, grouped by cause, with an example of each;
* two of the diffs it writes;
* the HTML migration report over all of it, and where it was written.

``--full`` prints every case's findings and diff instead (what the demo printed before). Each case
is a program of its own (artifact paths like ``model.pt`` recur across cases), so each is analysed
on its own, in worker processes that import the engine once.
"""

from __future__ import annotations

import argparse
import os
import re
import sys
import time
from collections import Counter, defaultdict
from concurrent.futures import ProcessPoolExecutor
from dataclasses import dataclass
from pathlib import Path

from ts2export.harness.corpus import Case, all_cases, case_options, run_tree, source_files

#: Diffs the page shows: a data-dependent branch made torch.cond, and a trace whose save and
#: loads migrate as one unit (the first case of each kind found, in this order of preference).
SHOWCASE = (("control_flow/cond_gate", "a data-dependent `if` becomes torch.cond"),
            ("callsites/deploy_and_serve", "a trace, its save and its loads migrate as one unit"))
MAX_DIFF_LINES = 30
RULE_ROWS = 16  # rules shown in the table (the most found); the others are summed in one row


@dataclass
class CaseResult:
    case: str
    results: list  # FileResult of each file, apply --unsafe-fixes


def _analyse(root: str) -> CaseResult:
    from ts2export.harness.corpus import load_case

    case = load_case(Path(root))
    files = {p.relative_to(case.before).as_posix(): p.read_bytes() for p in source_files(case.before)}
    results = run_tree(files, case_options(case, "unsafe"))
    for r in results:  # plain data across the process boundary: the fixes' libcst nodes stay here
        for f in [*r.findings, *r.fixed]:
            f.fix = f.alternative = None
    return CaseResult(case.name, results)


def analyse(cases: list[Case], jobs: int) -> list[CaseResult]:
    roots = [str(c.root) for c in cases]
    if jobs <= 1:
        return [_analyse(r) for r in roots]
    import multiprocessing

    with ProcessPoolExecutor(jobs, mp_context=multiprocessing.get_context("fork")) as pool:
        return list(pool.map(_analyse, roots, chunksize=2))


_QUOTED = re.compile(r"`[^`]*`")
_WHERE = re.compile(r"[\w./-]+\.py:\d+(:\d+)?")


def cause(reason: str) -> str:
    """A held-back reason with its particulars (quoted code, places) taken out: what groups it."""
    text = reason.split(" (", 1)[0] if reason.startswith("it migrates together with") else reason
    text = _WHERE.sub("<file>", _QUOTED.sub("`...`", text))
    return re.split(r"[:;]", text, maxsplit=1)[0].strip()


def _rule_rows(outcomes: list[CaseResult]):
    from ts2export.engine.registry import rule_by_id

    found, fixed, held = Counter(), Counter(), Counter()
    for o in outcomes:
        for r in o.results:
            for f in r.findings:
                found[f.rule_id] += 1
                held[f.rule_id] += bool(f.held)
            for f in r.fixed:
                found[f.rule_id] += 1
                fixed[f.rule_id] += 1
    rows = []
    for rule_id in sorted(found):
        rule = rule_by_id(rule_id)
        left = found[rule_id] - fixed[rule_id] - held[rule_id]
        rows.append((rule_id, found[rule_id], fixed[rule_id], held[rule_id], left, rule.summary if rule else ""))
    return rows


def _held_groups(outcomes: list[CaseResult]) -> list[tuple[str, int, str]]:
    groups: dict[str, list[str]] = defaultdict(list)
    for o in outcomes:
        for r in o.results:
            for f in r.findings:
                if f.held:
                    groups[cause(f.held)].append(f"{o.case}/{f.path}:{f.line} {f.rule_id}: {f.held}")
    return sorted(((c, len(ex), ex[0]) for c, ex in groups.items()), key=lambda g: (-g[1], g[0]))


def _short(text: str, n: int) -> str:
    return text if len(text) <= n else text[: n - 3] + "..."


def summary_page(outcomes: list[CaseResult], report: Path, seconds: float, out=sys.stdout) -> None:
    from ts2export.ci.output import unified_diff

    files = sum(len(o.results) for o in outcomes)
    w = out.write
    w(f"ts2export over its bundled corpus: {len(outcomes)} TorchScript-era programs, {files} files\n")
    w("(what `ts2export apply --unsafe-fixes` does to each program, computed in memory; nothing is written)\n\n")
    rows = _rule_rows(outcomes)
    w(f"{'rule':<8}{'found':>6}{'fixed':>7}{'held':>6}{'left':>6}  summary\n")
    shown_rows = sorted(rows, key=lambda r: (-r[1], r[0]))[:RULE_ROWS]
    for rule_id, n, fx, hd, left, summ in sorted(shown_rows):
        w(f"{rule_id:<8}{n:>6}{fx:>7}{hd:>6}{left:>6}  {_short(summ, 70)}\n")
    rest = [r for r in rows if r not in shown_rows]
    if rest:
        sums = [sum(r[i] for r in rest) for i in (1, 2, 3, 4)]
        w(f"{'+' + str(len(rest)):<8}{sums[0]:>6}{sums[1]:>7}{sums[2]:>6}{sums[3]:>6}  "
          f"more rules with fewer findings each ({', '.join(r[0] for r in rest[:6])}, ...; all in the report)\n")
    total = [sum(r[i] for r in rows) for i in (1, 2, 3, 4)]
    w(f"{'total':<8}{total[0]:>6}{total[1]:>7}{total[2]:>6}{total[3]:>6}  "
      "(fixed: written by apply; held: its fix waits so that no program breaks; left: report-only, for a person)\n\n")
    groups = _held_groups(outcomes)
    if groups:
        w(f"Held back, by cause ({total[2]} fixes; each names its cause in `ts2export scan --unsafe-fixes`):\n")
        for c, n, example in groups[:8]:
            w(f"{n:>4}  {_short(c, 92)}\n")
            w(f"      e.g. {_short(example, 110)}\n")
        if len(groups) > 8:
            w(f"      ... and {len(groups) - 8} more causes (see the report)\n")
        w("\n")
    by_name = {o.case: o for o in outcomes}
    shown = 0
    for name, what in SHOWCASE:
        o = by_name.get(name)
        changed = [r for r in (o.results if o else []) if r.changed]
        if not changed:
            continue
        w(f"== {name}: {what}\n")
        lines = "".join(unified_diff(r) for r in changed).splitlines()
        for line in lines[:MAX_DIFF_LINES]:
            w(line + "\n")
        if len(lines) > MAX_DIFF_LINES:
            w(f"... ({len(lines) - MAX_DIFF_LINES} more lines: bash scripts/demo.sh --full)\n")
        w("\n")
        shown += 1
    w(f"Report: {report} (one self-contained page: open it in a browser)\n")
    w(f"Every case's findings and diff: bash scripts/demo.sh --full    ({seconds:.1f} s)\n")


def full_page(outcomes: list[CaseResult], out=sys.stdout) -> None:
    from ts2export.ci.output import finding_line, unified_diff

    for o in outcomes:
        out.write(f"== {o.case}\n")
        for r in o.results:
            if r.error:
                out.write(f"{r.path}: error: {r.error}\n")
            for f in sorted(r.fixed, key=lambda f: f.sort_key()):
                out.write(f"fixed: {finding_line(f)}\n")
            for f in sorted(r.findings, key=lambda f: f.sort_key()):
                out.write(finding_line(f) + "\n")
        for r in o.results:
            if r.changed:
                out.write(unified_diff(r))
        out.write("\n")


def write_report(outcomes: list[CaseResult], path: Path) -> None:
    from types import SimpleNamespace

    from ts2export.ci.report import build, to_html
    from ts2export.engine.registry import all_rules
    from ts2export.textio import atomic_write_bytes

    results, pairs = [], []
    for o in outcomes:
        for r in o.results:
            results.append(r)
            # what `scan --unsafe-fixes` reports: the findings apply fixes (by their fix's safety) and the others
            pairs.extend((f, SimpleNamespace(path=f"{o.case}/{r.path}")) for f in [*r.fixed, *r.findings])
    data = build("ts2export corpus", results, pairs, summaries={r.id: r.summary for r in all_rules()})
    path.parent.mkdir(parents=True, exist_ok=True)
    atomic_write_bytes(path, to_html(data).encode("utf-8"))


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="demo", description=__doc__.split("\n\n")[0])
    parser.add_argument("--full", action="store_true", help="every case's findings and diff")
    parser.add_argument("-o", "--report", type=Path, default=Path("ts2export-demo-report.html"),
                        help="where the HTML report goes")
    parser.add_argument("--jobs", type=int, default=os.cpu_count() or 1)
    parser.add_argument("--case", action="append", default=[], metavar="FAMILY/CASE",
                        help="only these corpus cases (repeatable; default: all)")
    args = parser.parse_args(argv)
    started = time.monotonic()
    cases = all_cases()
    if args.case:
        unknown = sorted(set(args.case) - {c.name for c in cases})
        if unknown:
            parser.error(f"no such corpus case: {', '.join(unknown)}")
        cases = [c for c in cases if c.name in args.case]
    outcomes = analyse(cases, max(1, args.jobs))
    report = args.report.resolve()
    write_report(outcomes, report)
    if args.full:
        full_page(outcomes)
        print(f"Report: {report}")
    else:
        summary_page(outcomes, report, time.monotonic() - started)
    return 1 if any(r.error for o in outcomes for r in o.results) else 0


if __name__ == "__main__":
    sys.exit(main())
