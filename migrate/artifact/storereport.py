"""The model-store report: `<out>/report.json` (one record per artifact, sorted by path) and
`<out>/report.html` (totals by status and failure class, the slowest and largest artifacts, every
artifact's details with a link to its own report.md), and the merge of shards' reports.

Record fields: ``path`` (relative to the store's root), ``sha256``, ``status`` (``migrated``,
``mismatch``, ``failed``, ``no-inputs``, ``corrupt``, ``timeout``, ``crashed``), ``failure_class``,
``error`` (first line), ``inputs`` (where they came from), ``output`` (the artifact's folder under
the run's output folder), ``timings`` (seconds per step and ``total``), ``sizes`` (bytes: ``old``,
``pt2``, ``pte``, ``package``), ``max_abs_error`` (largest over every verify row), ``steps``,
``device``. Everything but ``timings`` is the same on every run of the same store and options.
"""

from __future__ import annotations

import html
import json
import os
from collections import Counter
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from ts2export.artifact.errors import ArtifactError
from ts2export.artifact.fsutil import write_text_atomic

STATUSES = ("migrated", "mismatch", "failed", "no-inputs", "corrupt", "timeout", "crashed")
FORMAT = "ts2export-store-report"


def totals(records: Sequence[dict[str, Any]]) -> dict[str, int]:
    count = Counter(r["status"] for r in records)
    return {s: count[s] for s in STATUSES if count[s]}


def failure_classes(records: Sequence[dict[str, Any]]) -> dict[str, int]:
    count = Counter(r["failure_class"] for r in records if r.get("failure_class"))
    return dict(sorted(count.items()))


def build(records: Sequence[dict[str, Any]], store: str, options: dict[str, Any], options_hash: str,
          shard: str | None, pending: int = 0) -> dict[str, Any]:
    ordered = sorted(records, key=lambda r: r["path"])
    return {
        "format": FORMAT, "version": 1, "store": store, "options": options, "options_hash": options_hash,
        "shard": shard, "artifacts_total": len(ordered) + pending, "pending": pending,
        "totals": totals(ordered), "failure_classes": failure_classes(ordered), "artifacts": ordered,
    }


def write(out: Path, report: dict[str, Any], bases: dict[str, str] | None = None) -> None:
    """report.json and report.html into `out`; `bases` maps a record's path to the folder (relative
    to `out`) its outputs live under when that is not `out` itself (a merge of shards)."""
    write_text_atomic(out / "report.json", json.dumps(report, indent=2, sort_keys=True) + "\n")
    write_text_atomic(out / "report.html", render_html(report, bases or {}))


def load(folder: Path) -> dict[str, Any]:
    path = folder / "report.json" if folder.is_dir() else folder
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise ArtifactError(f"{path}: no such report (run migrate-artifact with --out {folder} first)") from None
    except (OSError, UnicodeDecodeError, ValueError) as exc:
        raise ArtifactError(f"{path}: not a readable report: {exc}") from None
    if not isinstance(data, dict) or data.get("format") != FORMAT:
        raise ArtifactError(f"{path}: not a model-store report of migrate-artifact")
    return data


def merge(folders: Sequence[Path], out: Path) -> dict[str, Any]:
    """One report from shards' reports (same store and options); writes it into `out`."""
    reports = [load(f) for f in folders]
    first = reports[0]
    records: dict[str, dict[str, Any]] = {}
    bases: dict[str, str] = {}
    for folder, rep in zip(folders, reports):
        if rep["options_hash"] != first["options_hash"]:
            raise ArtifactError(f"{folder}: made with other options than {folders[0]} (options hash "
                                f"{rep['options_hash']} vs {first['options_hash']}); merge runs of one configuration")
        for r in rep["artifacts"]:
            if r["path"] in records:
                raise ArtifactError(f"{folder}: {r['path']} is also in another report (overlapping shards?)")
            records[r["path"]] = r
            bases[r["path"]] = os.path.relpath(folder, out)
    pending = sum(rep.get("pending", 0) for rep in reports)
    merged = build(list(records.values()), first["store"], first["options"], first["options_hash"], None, pending)
    merged["merged_from"] = [rep.get("shard") for rep in reports]
    out.mkdir(parents=True, exist_ok=True)
    write(out, merged, bases)
    return merged


# ---- HTML ---------------------------------------------------------------------------------------------

_CSS = """body{font:14px/1.4 system-ui,sans-serif;margin:2em;color:#222}table{border-collapse:collapse;margin:.5em 0 1.5em}
td,th{border:1px solid #ccc;padding:3px 8px;text-align:left;vertical-align:top}th{background:#f3f3f3}
.migrated{color:#176b2c}.mismatch,.failed,.crashed,.timeout{color:#a4161a}.no-inputs,.corrupt{color:#8a5a00}
td.num{text-align:right;font-variant-numeric:tabular-nums}code{font-size:12px}"""


def _e(value: Any) -> str:
    return html.escape("" if value is None else str(value))


def _kib(n: Any) -> str:
    return "" if n is None else f"{n / 1024:.1f} KiB"


def _table(head: Sequence[str], rows: Sequence[Sequence[str]]) -> str:
    out = ["<table><tr>" + "".join(f"<th>{_e(h)}</th>" for h in head) + "</tr>"]
    out += ["<tr>" + "".join(rows_cell for rows_cell in row) + "</tr>" for row in rows]
    return "\n".join(out) + "</table>"


def _td(value: Any, cls: str = "") -> str:
    return f'<td class="{cls}">{_e(value)}</td>' if cls else f"<td>{_e(value)}</td>"


def _link(r: dict[str, Any], bases: dict[str, str]) -> str:
    base = bases.get(r["path"], ".")
    target = Path(base) / r.get("output", "") / "report.md"
    has_report = r["status"] not in ("no-inputs", "corrupt", "timeout", "crashed")
    label = _e(r["path"])
    return f'<td><a href="{_e(target.as_posix())}">{label}</a></td>' if has_report else f"<td>{label}</td>"


def render_html(report: dict[str, Any], bases: dict[str, str]) -> str:
    records = report["artifacts"]
    title = f"ts2export migrate-artifact: {report['store']}"
    parts = [f"<!doctype html><html><head><meta charset='utf-8'><title>{_e(title)}</title><style>{_CSS}</style></head><body>",
             f"<h1>{_e(title)}</h1>",
             f"<p>{report['artifacts_total']} artifact(s)" + (f", shard {_e(report['shard'])}" if report.get("shard") else "")
             + (f", {report['pending']} not run yet (interrupted)" if report.get("pending") else "")
             + f"; options hash <code>{_e(report['options_hash'])}</code></p>",
             "<h2>By status</h2>",
             _table(["status", "artifacts"], [[_td(s, s), _td(n, "num")] for s, n in report["totals"].items()])]
    if report["failure_classes"]:
        parts += ["<h2>By failure class</h2>",
                  _table(["failure class", "artifacts"], [[_td(c), _td(n, "num")] for c, n in report["failure_classes"].items()])]
    slow = sorted(records, key=lambda r: -(r.get("timings") or {}).get("total", 0.0))[:10]
    parts += ["<h2>Slowest</h2>", _table(["artifact", "status", "seconds"], [
        [_link(r, bases), _td(r["status"], r["status"]), _td(f"{(r.get('timings') or {}).get('total', 0.0):.2f}", "num")] for r in slow])]
    large = sorted(records, key=lambda r: -((r.get("sizes") or {}).get("old") or 0))[:10]
    parts += ["<h2>Largest</h2>", _table(["artifact", "status", "size"], [
        [_link(r, bases), _td(r["status"], r["status"]), _td(_kib((r.get("sizes") or {}).get("old")), "num")] for r in large])]
    rows = []
    for r in records:
        sizes = r.get("sizes") or {}
        rows.append([
            _link(r, bases), _td(r["status"], r["status"]), _td(r.get("failure_class")), _td(r.get("inputs")),
            _td(_kib(sizes.get("old")), "num"), _td(_kib(sizes.get("pt2")), "num"), _td(_kib(sizes.get("pte")), "num"),
            _td("" if r.get("max_abs_error") is None else f"{r['max_abs_error']:.3g}", "num"),
            _td(f"{(r.get('timings') or {}).get('total', 0.0):.2f}", "num"), _td(r.get("error")),
        ])
    parts += ["<h2>Artifacts</h2>", _table(
        ["artifact", "status", "failure class", "inputs", ".pt", ".pt2", ".pte", "max abs error", "seconds", "error"], rows)]
    parts.append("</body></html>")
    return "\n".join(parts) + "\n"
