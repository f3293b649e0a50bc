"""The migration report: ``ts2export report PATH... -o report.html`` (or ``--format markdown``).

What is left per rule and per top-level folder (of the one folder given, else of the root), what ``apply`` can fix and what is held back (and
why), and progress against the baseline when there is one. The HTML page is one self-contained file:
inline CSS and SVG charts drawn here, no script, nothing fetched from the network. The markdown
version is meant for a pull-request comment (GitHub renders its ``mermaid`` pie chart).

Data model: one :class:`Item` per finding. ``held_by`` (why a fixable construct is held back, e.g. a
reader whose writer elsewhere stays TorchScript) and ``unit`` (the group of constructs that migrate
together) are read from the finding when it carries them, so the report shows them as soon as the
engine fills them in.
"""

from __future__ import annotations

import html
import math
from collections import Counter
from dataclasses import dataclass, field
from pathlib import PurePosixPath
from typing import Iterable, Sequence

from ts2export import __version__

CATEGORIES = ("safe", "unsafe", "held", "manual")
LABELS = {
    "safe": "fixable by `ts2export apply`",
    "unsafe": "fixable with `--unsafe-fixes`",
    "held": "held back (it would break code that stays TorchScript)",
    "manual": "needs a person",
}
COLORS = {"safe": "#2e7d32", "unsafe": "#ef9f1a", "held": "#7b3fa0", "manual": "#5b6b7a",
          "fixed": "#26a69a", "remaining": "#90a4ae", "new": "#d32f2f", "recorded": "#cfd8dc"}
TOP_LEVEL = "(top level)"


@dataclass(frozen=True)
class Item:
    rule: str
    path: str  # relative to the configuration root, posix
    line: int
    column: int
    message: str
    fix: str  # "safe", "unsafe" or "none"
    held_by: str | None = None
    unit: str | None = None
    status: str | None = None  # "new" or "known" when compared with a baseline
    cell: int | None = None  # in a notebook: the cell (line and column are within it)

    @property
    def where(self) -> str:
        """``line``, in a notebook ``cell N:line``."""
        return f"cell {self.cell}:{self.line}" if self.cell is not None else str(self.line)

    @property
    def category(self) -> str:
        if self.held_by:
            return "held"
        return self.fix if self.fix in ("safe", "unsafe") else "manual"

    @property
    def reason(self) -> str:
        return self.held_by or self.message


def folder_of(path: str, base: str = "") -> str:
    """The first folder below ``base`` that holds ``path`` ("base/name"), or ``base`` itself."""
    parts = PurePosixPath(path).parts
    depth = len(PurePosixPath(base).parts) if base else 0
    if len(parts) > depth + 1:
        return "/".join(parts[: depth + 1])
    return base or TOP_LEVEL


@dataclass
class Progress:
    """Progress against a baseline (only the entries the run covered)."""

    file: str
    recorded: int
    fixed: int
    new: int
    recorded_by_rule: Counter = field(default_factory=Counter)
    recorded_by_folder: Counter = field(default_factory=Counter)
    fixed_by_rule: Counter = field(default_factory=Counter)

    @property
    def remaining(self) -> int:
        return self.recorded - self.fixed

    @property
    def percent(self) -> float:
        return 100.0 * self.fixed / self.recorded if self.recorded else 100.0


@dataclass
class ReportData:
    project: str
    items: list[Item]
    files: int
    suppressed: int = 0
    errors: list[tuple[str, str]] = field(default_factory=list)
    summaries: dict[str, str] = field(default_factory=dict)  # rule id -> summary
    progress: Progress | None = None
    base: str = ""  # findings are grouped by the top-level folders of this folder (relative to the root)

    def count(self, category: str) -> int:
        return sum(i.category == category for i in self.items)

    def by(self, key: str) -> dict[str, Counter]:
        """key ("rule" or "folder") -> Counter of categories, largest first."""
        groups: dict[str, Counter] = {}
        for i in self.items:
            label = folder_of(i.path, self.base) if key == "folder" else getattr(i, key)
            groups.setdefault(label, Counter())[i.category] += 1
        return dict(sorted(groups.items(), key=lambda kv: (-sum(kv[1].values()), kv[0])))

    @property
    def files_with_findings(self) -> int:
        return len({i.path for i in self.items})


def _held_by(finding) -> str | None:
    """Why neither `apply` nor `apply --unsafe-fixes` writes it (None: one of them does)."""
    if getattr(finding, "held", None):
        return finding.held
    unsafe = getattr(finding, "held_unsafe", None)
    return f"with --unsafe-fixes: {unsafe}" if unsafe else None


def item_of(finding, rel_path: str, status: str | None = None) -> Item:
    return Item(
        rule=finding.rule_id, path=rel_path, line=finding.line, column=finding.column, message=finding.message,
        fix=finding.applicability.value, held_by=_held_by(finding),
        unit=getattr(finding, "unit", None) or None, status=status, cell=finding.cell,
    )


def build(project: str, results: Sequence, pairs: Sequence, comparison=None, baseline_file: str | None = None,
          summaries: dict[str, str] | None = None, base: str = "") -> ReportData:
    """``pairs``: (finding, baseline entry) for every finding (see ``baseline.fingerprint_findings``);
    ``base``: the folder (relative to the root) whose top-level folders group the findings."""
    new_ids = {id(f) for f, _ in comparison.new} if comparison is not None else set()
    items = [item_of(f, e.path, None if comparison is None else ("new" if id(f) in new_ids else "known")) for f, e in pairs]
    items.sort(key=lambda i: (i.path, i.cell or 0, i.line, i.column, i.rule))
    data = ReportData(
        project=project, items=items, files=len(results), suppressed=sum(r.suppressed for r in results),
        errors=[(r.path, r.error) for r in results if r.error], summaries=dict(summaries or {}), base=base,
    )
    if comparison is not None:
        recorded = [e for _, e in comparison.known] + list(comparison.gone)
        data.progress = Progress(
            file=baseline_file or "", recorded=len(recorded), fixed=len(comparison.gone), new=len(comparison.new),
            recorded_by_rule=Counter(e.rule for e in recorded), recorded_by_folder=Counter(folder_of(e.path, data.base) for e in recorded),
            fixed_by_rule=Counter(e.rule for e in comparison.gone),
        )
    return data


# --------------------------------------------------------------------------------------------
# SVG charts


def _e(text: object) -> str:
    return html.escape(str(text), quote=True)


def _short(text: str, n: int) -> str:
    return text if len(text) <= n else text[: n - 1] + "…"


def _ticks(peak: int) -> tuple[int, int]:
    """(axis maximum, tick step): whole-number ticks, at most five of them past zero."""
    magnitude = 1
    while True:
        for step in (1, 2, 5):
            if step * magnitude * 5 >= peak:
                s = step * magnitude
                return s * max(1, math.ceil(peak / s)), s
        magnitude *= 10


def stacked_bars(rows: Sequence[tuple[str, Sequence[tuple[str, int]]]], *, chart_id: str, title: str,
                 markers: dict[str, int] | None = None, label_width: int = 190, width: int = 760) -> str:
    """Horizontal stacked bars: one row per label, one segment per (series, value).

    ``markers``: label -> a value drawn as a dashed tick (e.g. the baseline's count)."""
    bar_h, gap, top, bottom = 22, 10, 8, 28
    plot_w = width - label_width - 60
    peak = max([sum(v for _, v in segs) for _, segs in rows] + list((markers or {}).values()) + [1])
    scale_max, step = _ticks(peak)
    height = top + len(rows) * (bar_h + gap) + bottom
    out = [f'<svg id="{_e(chart_id)}" class="chart" role="img" aria-label="{_e(title)}" xmlns="http://www.w3.org/2000/svg" '
           f'width="{width}" height="{height}" viewBox="0 0 {width} {height}">', f"<title>{_e(title)}</title>"]
    axis_y = top + len(rows) * (bar_h + gap)
    for value in range(0, scale_max + 1, step):
        x = label_width + plot_w * value / scale_max
        out.append(f'<line class="grid" x1="{x:.1f}" y1="{top - 4}" x2="{x:.1f}" y2="{axis_y}" />')
        out.append(f'<text class="tick" x="{x:.1f}" y="{axis_y + 16}" text-anchor="middle">{value}</text>')
    for n, (label, segs) in enumerate(rows):
        y = top + n * (bar_h + gap)
        out.append(f'<text class="label" x="{label_width - 10}" y="{y + bar_h * 0.7:.1f}" text-anchor="end">'
                   f"<title>{_e(label)}</title>{_e(_short(label, 26))}</text>")
        x = float(label_width)
        total = 0
        for series, value in segs:
            if value <= 0:
                continue
            w = plot_w * value / scale_max
            out.append(f'<rect class="bar seg-{_e(series)}" x="{x:.1f}" y="{y}" width="{max(w, 1.5):.1f}" height="{bar_h}" '
                       f'fill="{COLORS.get(series, "#888")}"><title>{_e(label)}: {value} {_e(_series_label(series))}</title></rect>')
            x += w
            total += value
        marker = (markers or {}).get(label)
        if marker:
            mx = label_width + plot_w * marker / scale_max
            out.append(f'<line class="marker" x1="{mx:.1f}" y1="{y - 3}" x2="{mx:.1f}" y2="{y + bar_h + 3}">'
                       f"<title>{_e(label)}: {marker} in the baseline</title></line>")
        out.append(f'<text class="value" x="{x + 6:.1f}" y="{y + bar_h * 0.7:.1f}">{total}</text>')
    out.append("</svg>")
    return "".join(out)


def _series_label(series: str) -> str:
    return {**LABELS, "fixed": "fixed since the baseline", "remaining": "left from the baseline",
            "new": "new since the baseline"}.get(series, series).replace("`", "")


def donut(parts: Sequence[tuple[str, int]], *, chart_id: str, title: str, center: str, size: int = 220) -> str:
    """A donut chart of (series, value) with ``center`` text in the hole."""
    total = sum(v for _, v in parts)
    r, stroke = size * 0.36, size * 0.16
    c = size / 2
    out = [f'<svg id="{_e(chart_id)}" class="chart donut" role="img" aria-label="{_e(title)}" xmlns="http://www.w3.org/2000/svg" '
           f'width="{size}" height="{size}" viewBox="0 0 {size} {size}">', f"<title>{_e(title)}</title>",
           f'<circle class="track" cx="{c}" cy="{c}" r="{r:.1f}" fill="none" stroke="#eceff1" stroke-width="{stroke:.1f}" />']
    start = -math.pi / 2
    for series, value in parts:
        if value <= 0 or total == 0:
            continue
        tip = f"<title>{value} {_e(_series_label(series))}</title>"
        if value == total:
            out.append(f'<circle class="slice seg-{_e(series)}" cx="{c}" cy="{c}" r="{r:.1f}" fill="none" '
                       f'stroke="{COLORS[series]}" stroke-width="{stroke:.1f}">{tip}</circle>')
            break
        end = start + 2 * math.pi * value / total
        x1, y1 = c + r * math.cos(start), c + r * math.sin(start)
        x2, y2 = c + r * math.cos(end), c + r * math.sin(end)
        large = 1 if end - start > math.pi else 0
        out.append(f'<path class="slice seg-{_e(series)}" d="M {x1:.2f} {y1:.2f} A {r:.1f} {r:.1f} 0 {large} 1 {x2:.2f} {y2:.2f}" '
                   f'fill="none" stroke="{COLORS[series]}" stroke-width="{stroke:.1f}">{tip}</path>')
        start = end
    out.append(f'<text class="center" x="{c}" y="{c + 8}" text-anchor="middle">{_e(center)}</text>')
    out.append("</svg>")
    return "".join(out)


# --------------------------------------------------------------------------------------------
# HTML

_CSS = """
:root { color-scheme: light; }
* { box-sizing: border-box; }
body { font: 15px/1.45 system-ui, -apple-system, "Segoe UI", "DejaVu Sans", sans-serif; color: #1f2a33;
       margin: 0; background: #f5f7f9; }
main { max-width: 1080px; margin: 0 auto; padding: 28px 28px 60px; }
h1 { font-size: 26px; margin: 0 0 4px; }
h2 { font-size: 19px; margin: 34px 0 12px; }
.sub { color: #5b6b7a; margin: 0 0 22px; }
.cards { display: flex; flex-wrap: wrap; gap: 14px; }
.card { background: #fff; border-radius: 10px; padding: 14px 18px; min-width: 180px; flex: 1;
        box-shadow: 0 1px 3px rgba(0,0,0,.08); border-top: 4px solid #90a4ae; }
.card .n { font-size: 30px; font-weight: 700; }
.card .t { color: #5b6b7a; font-size: 13px; }
.panel { background: #fff; border-radius: 10px; padding: 16px 18px; box-shadow: 0 1px 3px rgba(0,0,0,.08); overflow-x: auto; }
.row { display: flex; gap: 18px; align-items: center; flex-wrap: wrap; }
.legend { display: flex; flex-wrap: wrap; gap: 14px; font-size: 13px; margin: 8px 0 4px; }
.legend span::before { content: ""; display: inline-block; width: 11px; height: 11px; border-radius: 2px;
                       margin-right: 6px; vertical-align: -1px; background: var(--c); }
svg.chart text { font: 12.5px system-ui, "DejaVu Sans", sans-serif; fill: #34434f; }
svg.chart text.center { font-size: 26px; font-weight: 700; }
svg.chart line.grid { stroke: #e3e8ec; }
svg.chart line.marker { stroke: #1f2a33; stroke-width: 2; stroke-dasharray: 3 2; }
svg.chart text.value { font-weight: 600; }
table { border-collapse: collapse; width: 100%; background: #fff; font-size: 13.5px; }
th, td { text-align: left; padding: 6px 10px; border-bottom: 1px solid #e3e8ec; vertical-align: top; }
th { background: #eef2f5; font-weight: 600; }
td.num, th.num { text-align: right; font-variant-numeric: tabular-nums; }
code { font: 12.5px ui-monospace, "DejaVu Sans Mono", monospace; background: #eef2f5; padding: 1px 4px; border-radius: 4px; }
details summary { cursor: pointer; margin: 8px 0; font-weight: 600; }
.bar-bg { background: #e3e8ec; border-radius: 6px; height: 14px; overflow: hidden; display: flex; }
.tag { font-size: 11px; padding: 1px 6px; border-radius: 8px; color: #fff; background: var(--c); white-space: nowrap; }
.errors td { color: #b71c1c; }
footer { color: #5b6b7a; font-size: 12px; margin-top: 40px; }
"""


def _legend(series: Iterable[str]) -> str:
    return '<div class="legend">' + "".join(
        f'<span style="--c:{COLORS[s]}">{_e(_series_label(s))}</span>' for s in series) + "</div>"


def _card(n: object, text: str, color: str) -> str:
    return f'<div class="card" style="border-top-color:{color}"><div class="n">{_e(n)}</div><div class="t">{_e(text)}</div></div>'


def _md_code(text: str) -> str:
    """`code` spans of a message as <code> (the rest escaped)."""
    parts = _e(text).split("`")
    return "".join(f"<code>{p}</code>" if i % 2 else p for i, p in enumerate(parts))


def _rows_by(data: ReportData, key: str) -> list[tuple[str, list[tuple[str, int]]]]:
    return [(label, [(c, counts[c]) for c in CATEGORIES]) for label, counts in data.by(key).items()]


def to_html(data: ReportData) -> str:
    total = len(data.items)
    fixable = data.count("safe") + data.count("unsafe")
    held = data.count("held") + data.count("manual")
    p = data.progress
    parts = [
        "<!DOCTYPE html>", '<html lang="en"><head><meta charset="utf-8">',
        '<meta name="viewport" content="width=device-width, initial-scale=1">',
        f"<title>TorchScript migration report: {_e(data.project)}</title>", f"<style>{_CSS}</style></head><body><main>",
        f"<h1>TorchScript migration report</h1><p class=\"sub\">{_e(data.project)} · {data.files} file"
        f"{'s' if data.files != 1 else ''} checked · ts2export {_e(__version__)}</p>",
        '<div class="cards">',
        _card(total, f"TorchScript findings left in {data.files_with_findings} file{'s' if data.files_with_findings != 1 else ''}", "#1f2a33"),
        _card(data.count("safe"), "fixable now by ts2export apply", COLORS["safe"]),
        _card(data.count("unsafe"), "fixable with --unsafe-fixes (review)", COLORS["unsafe"]),
        _card(held, "held back or left for a person (reasons below)", COLORS["manual"]),
    ]
    if p is not None:
        parts.append(_card(f"{p.percent:.0f}%", f"of the baseline fixed ({p.fixed} of {p.recorded}); {p.new} new", COLORS["fixed"]))
    parts.append("</div>")

    if p is not None:
        parts.append("<h2>Progress against the baseline</h2><div class=\"panel\">")
        parts.append(f"<p>Baseline <code>{_e(p.file)}</code>: {p.recorded} finding{'s' if p.recorded != 1 else ''} recorded, "
                     f"<b>{p.fixed} fixed</b>, {p.remaining} left, <b>{p.new} new</b> since.</p>")
        parts.append(stacked_bars([("baseline", [("fixed", p.fixed), ("remaining", p.remaining)]),
                                   ("now", [("remaining", p.remaining), ("new", p.new)])],
                                  chart_id="chart-progress", title="Findings: baseline against now", label_width=110))
        parts.append(_legend(("fixed", "remaining", "new")))
        parts.append("</div>")

    parts.append("<h2>Fixable and held back</h2><div class=\"panel\"><div class=\"row\">")
    parts.append(donut([(c, data.count(c)) for c in CATEGORIES], chart_id="chart-categories",
                       title="Findings by what it takes to fix them", center=str(total)))
    parts.append('<div style="flex:1;min-width:320px">' + _legend(CATEGORIES) + f"<p>{fixable} of {total} finding{'s' if total != 1 else ''} "
                 f"can be rewritten by <code>ts2export apply</code> ({data.count('unsafe')} of them only with "
                 f"<code>--unsafe-fixes</code>); {held} {'is' if held == 1 else 'are'} held back.</p></div>")
    parts.append("</div></div>")

    folders = _rows_by(data, "folder")
    parts.append("<h2>Where it is: findings per folder</h2><div class=\"panel\">")
    if folders:
        markers = dict(p.recorded_by_folder) if p is not None else None
        parts.append(stacked_bars(folders, chart_id="chart-folders", title="Findings per folder", markers=markers))
        parts.append(_legend(CATEGORIES) + (' <div class="legend">dashed tick: the folder\'s count in the baseline</div>' if markers else ""))
    else:
        parts.append("<p>No TorchScript left.</p>")
    parts.append("</div>")

    rules = _rows_by(data, "rule")
    parts.append("<h2>What it is: findings per rule</h2><div class=\"panel\">")
    if rules:
        markers = dict(p.recorded_by_rule) if p is not None else None
        parts.append(stacked_bars(rules, chart_id="chart-rules", title="Findings per rule", markers=markers, label_width=90))
        parts.append(_legend(CATEGORIES))
        parts.append(_table_rules(data))
    else:
        parts.append("<p>No TorchScript left.</p>")
    parts.append("</div>")

    parts.append(_table_folders(data))
    parts.append(_held_list(data))
    if data.errors:
        parts.append("<h2>Files that could not be checked</h2><table class=\"errors\"><tr><th>file</th><th>why</th></tr>")
        parts.extend(f"<tr><td><code>{_e(path)}</code></td><td>{_e(err)}</td></tr>" for path, err in data.errors)
        parts.append("</table>")
    extra = f" {data.suppressed} finding{'s' if data.suppressed != 1 else ''} suppressed with <code>ts2export: ignore</code> are not counted." if data.suppressed else ""
    parts.append(f"<footer>Generated by ts2export {_e(__version__)}; one self-contained file, no script, nothing loaded from the network.{extra}</footer>")
    parts.append("</main></body></html>")
    return "\n".join(parts) + "\n"


def _table_rules(data: ReportData) -> str:
    p = data.progress
    head = "<tr><th>rule</th><th>what</th><th class=\"num\">left</th>" + "".join(
        f'<th class="num">{_e(h)}</th>' for h in ("apply", "unsafe", "held", "person")) + (
        '<th class="num">baseline</th><th class="num">fixed</th>' if p else "") + "</tr>"
    rows = []
    for rule, counts in data.by("rule").items():
        cells = "".join(f'<td class="num">{counts[c]}</td>' for c in CATEGORIES)
        base = f'<td class="num">{p.recorded_by_rule[rule]}</td><td class="num">{p.fixed_by_rule[rule]}</td>' if p else ""
        rows.append(f"<tr><td><code>{_e(rule)}</code></td><td>{_md_code(data.summaries.get(rule, ''))}</td>"
                    f'<td class="num"><b>{sum(counts.values())}</b></td>{cells}{base}</tr>')
    return f"<table>{head}{''.join(rows)}</table>"


def _table_folders(data: ReportData) -> str:
    groups = data.by("folder")
    if not groups:
        return ""
    rows = []
    peak = max(sum(c.values()) for c in groups.values())
    for folder, counts in groups.items():
        n = sum(counts.values())
        bar = "".join(f'<div style="width:{100 * counts[c] / peak:.1f}%;background:{COLORS[c]}"></div>' for c in CATEGORIES if counts[c])
        rows.append(f"<tr><td><code>{_e(folder)}</code></td><td class=\"num\"><b>{n}</b></td>"
                    + "".join(f'<td class="num">{counts[c]}</td>' for c in CATEGORIES)
                    + f'<td style="width:32%"><div class="bar-bg">{bar}</div></td></tr>')
    head = "<tr><th>folder</th><th class=\"num\">left</th>" + "".join(
        f'<th class="num">{_e(h)}</th>' for h in ("apply", "unsafe", "held", "person")) + "<th></th></tr>"
    return f"<h2>Per folder</h2><table>{head}{''.join(rows)}</table>"


def _held_list(data: ReportData) -> str:
    held = [i for i in data.items if i.category in ("held", "manual")]
    if not held:
        return ""
    units = any(i.unit for i in held)
    head = "<tr><th>where</th><th>rule</th><th>why it is held back</th>" + ("<th>unit</th>" if units else "") + "</tr>"
    rows = []
    for i in held:
        tag = f' <span class="tag" style="--c:{COLORS["new"]}">new</span>' if i.status == "new" else ""
        kind = "held back:" if i.held_by else "needs a person:"
        rows.append(f"<tr><td><code>{_e(i.path)}:{_e(i.where)}:{i.column}</code>{tag}</td><td><code>{_e(i.rule)}</code></td>"
                    f"<td><b>{kind}</b> {_md_code(i.reason)}</td>" + (f"<td>{_e(i.unit or '')}</td>" if units else "") + "</tr>")
    return (f"<h2>Held back or left for a person ({len(held)})</h2><details open><summary>Each finding <code>ts2export apply</code> "
            f"cannot fix, with the reason</summary><table>{head}{''.join(rows)}</table></details>")


# --------------------------------------------------------------------------------------------
# markdown (a pull-request comment)

MD_LIST_LIMIT = 50


def _text_bar(value: int, peak: int, width: int = 20) -> str:
    n = round(width * value / peak) if peak else 0
    return "█" * n + "░" * (width - n)


def _md_cell(text: str) -> str:
    return text.replace("|", "\\|").replace("\n", " ")


def to_markdown(data: ReportData) -> str:
    total = len(data.items)
    held = data.count("held") + data.count("manual")
    p = data.progress
    out = ["## TorchScript migration report", ""]
    out.append(f"**{total} finding{'s' if total != 1 else ''} left** in {data.files_with_findings} of {data.files} "
               f"file{'s' if data.files != 1 else ''} · {data.count('safe')} fixable by `ts2export apply` · "
               f"{data.count('unsafe')} more with `--unsafe-fixes` · {held} held back")
    if p is not None:
        out += ["", f"**Progress against the baseline** (`{p.file}`): `{_text_bar(p.fixed, p.recorded)}` "
                    f"**{p.percent:.0f}%** fixed ({p.fixed} of {p.recorded}); {p.remaining} left, **{p.new} new**."]
    if total:
        out += ["", "```mermaid", "pie showData title Findings by what it takes to fix them"]
        out += [f'    "{_series_label(c)}" : {data.count(c)}' for c in CATEGORIES if data.count(c)]
        out += ["```"]
    for key, title in (("folder", "Per folder"), ("rule", "Per rule")):
        groups = data.by(key)
        if not groups:
            continue
        peak = max(sum(c.values()) for c in groups.values())
        base = p.recorded_by_folder if (p and key == "folder") else p.recorded_by_rule if p else None
        out += ["", f"### {title}", "",
                f"| {key} | left | apply | unsafe | held | person |{' baseline |' if base is not None else ''} |",
                f"|---|---:|---:|---:|---:|---:|{'---:|' if base is not None else ''}---|"]
        for label, counts in groups.items():
            n = sum(counts.values())
            name = f"`{_md_cell(label)}`" + (f" {_md_cell(data.summaries[label])}" if key == "rule" and data.summaries.get(label) else "")
            cells = " | ".join(str(counts[c]) for c in CATEGORIES)
            out.append(f"| {name} | **{n}** | {cells} |{f' {base[label]} |' if base is not None else ''} `{_text_bar(n, peak, 12)}` |")
    held_items = [i for i in data.items if i.category in ("held", "manual")]
    if held_items:
        units = any(i.unit for i in held_items)
        out += ["", f"### Held back or left for a person ({len(held_items)})", "", "| where | rule | why |" + (" unit |" if units else ""),
                "|---|---|---|" + ("---|" if units else "")]
        for i in held_items[:MD_LIST_LIMIT]:
            new = " 🆕" if i.status == "new" else ""
            why = ("held back: " if i.held_by else "") + i.reason
            out.append(f"| `{_md_cell(i.path)}:{_md_cell(i.where)}`{new} | `{i.rule}` | {_md_cell(why)} |" + (f" {_md_cell(i.unit or '')} |" if units else ""))
        if len(held_items) > MD_LIST_LIMIT:
            out.append(f"\n… and {len(held_items) - MD_LIST_LIMIT} more (see `ts2export report -o report.html`).")
    if data.errors:
        out += ["", "### Files that could not be checked", ""]
        out += [f"- `{_md_cell(path)}`: {_md_cell(err)}" for path, err in data.errors]
    out += ["", f"<sub>ts2export {__version__}</sub>", ""]
    return "\n".join(out)
