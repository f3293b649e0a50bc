"""Report formats: text, json, sarif (2.1.0) and github (workflow-command annotations)."""

from __future__ import annotations

import difflib
import json
import re
from collections import Counter
from typing import Sequence

from ts2export import __version__
from ts2export.engine import FileResult
from ts2export.engine.notebooks import Notebook
from ts2export.engine.registry import all_rules
from ts2export.rule import Finding

FORMATS = ("text", "json", "sarif", "github")
INFO_URI = "https://github.com/ts2export/ts2export"


def _findings(results: Sequence[FileResult]) -> list[Finding]:
    return sorted((f for r in results for f in r.findings), key=Finding.sort_key)


def _errors(results: Sequence[FileResult]) -> list[FileResult]:
    return [r for r in results if r.error]


def summary_counts(results: Sequence[FileResult]) -> dict:
    findings = _findings(results)
    return {
        "files": len(results),
        "files_with_findings": len({f.path for f in findings}),
        "findings": len(findings),
        "fixable_safe": sum(f.applicability.value == "safe" and not f.held for f in findings),
        "fixable_unsafe": sum(f.applicability.value == "unsafe" and not f.held and not f.held_unsafe for f in findings),
        "held_back": sum(bool(f.held or f.held_unsafe) for f in findings),
        "suppressed": sum(r.suppressed for r in results),
        "errors": len(_errors(results)),
        "by_rule": dict(sorted(Counter(f.rule_id for f in findings).items())),
    }


def finding_line(f: Finding) -> str:
    if f.held:
        return f"{f.where}: {f.rule_id} {f.message} [held back: {f.held}]"
    if f.held_unsafe:
        return f"{f.where}: {f.rule_id} {f.message} [held back with --unsafe-fixes: {f.held_unsafe}]"
    mark = {"safe": " [*]", "unsafe": " [**]"}.get(f.applicability.value, "")
    return f"{f.where}: {f.rule_id} {f.message}{mark}"


# a position: path:line[:column], in a notebook path:cell N:line[:column]
_AT = r"\S+?(?::cell \d+)?:\d+(?::\d+)?"
_THROUGH = re.compile(rf"through (`.+?` at {_AT}|`@.+?` on `.+?` at {_AT}), which stays( and whose target ts2export cannot follow)?")


def holder_lines(results: Sequence[FileResult], limit: int = 3) -> list[str]:
    """One line per entry point that stays and holds back fixes elsewhere (most first): how many it
    holds, and how to let them migrate."""
    counts: Counter = Counter()
    unfollowable: set[str] = set()
    for f in _findings(results):
        m = _THROUGH.search(f.held or f.held_unsafe or "")
        if m:
            counts[m.group(1)] += 1
            if m.group(2):
                unfollowable.add(m.group(1))
    lines = []
    for site, n in sorted(counts.items(), key=lambda kv: (-kv[1], kv[0]))[:limit]:
        how = ("its target cannot be followed: migrate it by hand, or set `migrate-unfollowable = true` under "
               "[tool.ts2export] and check with `apply --test`" if site in unfollowable else "migrate it, and they can follow")
        lines.append(f"{n} fix{'es' if n != 1 else ''} held back behind {site}, which stays ({how})")
    if len(counts) > limit:
        rest = sum(n for _s, n in sorted(counts.items(), key=lambda kv: (-kv[1], kv[0]))[limit:])
        lines.append(f"{rest} more behind {len(counts) - limit} other entry point{'s' if len(counts) - limit != 1 else ''} that stay")
    return lines


def error_line(r: FileResult) -> str:
    return f"{r.path}: error: {r.error}"


def summary_line(results: Sequence[FileResult]) -> str:
    c = summary_counts(results)
    if not c["files"]:
        return ("No Python, notebook or C++ file to check here (none under the paths given, or all excluded), "
                "so no TorchScript was found.")
    parts = [f"Found {c['findings']} TorchScript finding{'s' if c['findings'] != 1 else ''} in {c['files_with_findings']} of {c['files']} file{'s' if c['files'] != 1 else ''}"]
    fixes = []
    if c["fixable_safe"]:
        fixes.append(f"{c['fixable_safe']} fixable with `ts2export apply` [*]")
    if c["fixable_unsafe"]:
        fixes.append(f"{c['fixable_unsafe']} more with `--unsafe-fixes` [**]")
    if c["held_back"]:
        fixes.append(f"{c['held_back']} held back so that no program breaks")
    if fixes:
        parts.append("; ".join(fixes))
    if c["suppressed"]:
        parts.append(f"{c['suppressed']} suppressed")
    if c["errors"]:
        parts.append(f"{c['errors']} file{'s' if c['errors'] != 1 else ''} could not be checked")
    return ", ".join(parts[:1]) + (" (" + "; ".join(parts[1:]) + ")" if parts[1:] else "") + "."


def artifacts(program, results: Sequence[FileResult] = ()) -> dict[str, list[dict]]:
    """Each artifact path (as a pattern, ``*`` for parts only known at run time) with the writers
    and readers the program model links through it. A site in a notebook (one of ``results``)
    gets its ``cell`` and its line within it."""
    if program is None:
        return {}
    table = program.artifact_table()  # a Program, or the ProgramFacts a cached run kept of it
    books = {r.path: Notebook({}, [], None, False, starts=list(r.cell_starts)) for r in results if r.cell_starts}
    if not books:
        return table
    out = {}
    for key, sites in table.items():
        out[key] = []
        for s in sites:
            if s["path"] in books:
                cell, line = books[s["path"]].place(s["line"])
                s = {**s, "line": line, "cell": cell}
            out[key].append(s)
    return out


def artifacts_text(program, results: Sequence[FileResult] = ()) -> str:
    groups = artifacts(program, results)
    if not groups:
        return ""
    lines = ["Artifacts (where each path is written and read; `*`: known at run time only):"]
    for key, sites in groups.items():
        lines.append(f"  {key}")
        for s in sites:
            cell = f"cell {s['cell']}:" if s.get("cell") else ""
            lines.append(f"    {s['kind']:<7} {s['path']}:{cell}{s['line']}:{s['column']} {s['code']}")
    return "\n".join(lines) + "\n"


def entry_points(program) -> list[dict]:
    """With a recording: each `torch.jit.script` / `trace` call of the run, whether the recorded
    run reached it, and what it compiled there (see ts2export.model.facts)."""
    return program.entry_point_table() if program is not None else []


def entry_points_text(program) -> str:
    table = entry_points(program)
    if not table:
        return ""
    reached = sum(e["reached"] for e in table)
    lines = [f"Entry points the recording reached: {reached} of {len(table)} (what the others compile is the "
             "static guess; record a run that reaches them)"]
    for e in table:
        what = ""
        if e["compiled"]:
            shown = ", ".join(e["compiled"][:6]) + (f" and {len(e['compiled']) - 6} more" if len(e["compiled"]) > 6 else "")
            what = f": compiled {shown}"
        lines.append(f"  {'reached' if e['reached'] else 'not reached':<11} {e['path']}:{e['line']}:{e['column']} {e['code']}{what}")
    return "\n".join(lines) + "\n"


def to_json(results: Sequence[FileResult], program=None) -> str:
    points = entry_points(program)
    doc = {
        "tool": "ts2export",
        "version": __version__,
        "findings": [f.to_dict() for f in _findings(results)],
        "artifacts": artifacts(program, results),
        **({"entry_points": points} if points else {}),
        "errors": [{"path": r.path, "message": r.error} for r in _errors(results)],
        "summary": summary_counts(results),
    }
    return json.dumps(doc, indent=2) + "\n"


def to_sarif(results: Sequence[FileResult]) -> str:
    rules = all_rules()
    index = {r.id: i for i, r in enumerate(rules)}
    sarif_rules = []
    for r in rules:
        sections = r.doc_sections()
        sarif_rules.append({
            "id": r.id,
            "name": r.name(),
            "shortDescription": {"text": r.summary},
            "fullDescription": {"text": sections.get("what it does", r.summary)},
            "help": {"text": sections.get("why", r.summary)},
            "properties": {"fix": r.applicability.value},
        })
    sarif_results = []
    for f in _findings(results):
        sarif_results.append({
            "ruleId": f.rule_id,
            "ruleIndex": index[f.rule_id],
            "level": "warning",
            "message": {"text": f.message},
            "locations": [{
                "physicalLocation": {
                    "artifactLocation": {"uri": f.path.replace("\\", "/"), "uriBaseId": "%SRCROOT%"},
                    "region": {
                        "startLine": f.line,
                        "startColumn": f.column,
                        "endLine": max(f.end_line, f.line),
                        "endColumn": f.end_column if f.end_line else f.column + 1,
                    },
                }
            }],
            "properties": {"fix": f.applicability.value, **({"cell": f.cell} if f.cell is not None else {})},
        })
    notifications = [
        {
            "level": "error",
            "message": {"text": r.error},
            "locations": [{"physicalLocation": {"artifactLocation": {"uri": r.path.replace("\\", "/"), "uriBaseId": "%SRCROOT%"}}}],
        }
        for r in _errors(results)
    ]
    doc = {
        "$schema": "https://json.schemastore.org/sarif-2.1.0.json",
        "version": "2.1.0",
        "runs": [{
            "tool": {"driver": {"name": "ts2export", "version": __version__, "informationUri": INFO_URI, "rules": sarif_rules}},
            "results": sarif_results,
            "invocations": [{
                "executionSuccessful": not notifications,
                "toolExecutionNotifications": notifications,
            }],
        }],
    }
    return json.dumps(doc, indent=2) + "\n"


def _gh_escape(text: str, prop: bool = False) -> str:
    text = text.replace("%", "%25").replace("\r", "%0D").replace("\n", "%0A")
    if prop:
        text = text.replace(":", "%3A").replace(",", "%2C")
    return text


def to_github(results: Sequence[FileResult]) -> str:
    lines = []
    for f in _findings(results):
        lines.append(
            f"::warning file={_gh_escape(f.path, True)},line={f.line},col={f.column},"
            f"endLine={max(f.end_line, f.line)},title={_gh_escape(f.rule_id, True)}::{_gh_escape(f.message)}"
        )
    for r in _errors(results):
        lines.append(f"::error file={_gh_escape(r.path, True)},title=ts2export::{_gh_escape(r.error or '')}")
    return "".join(line + "\n" for line in lines)


def unified_diff(r: FileResult) -> str:
    """A ``git apply``-able diff of one changed file (text decoded as the file's own encoding)."""
    from ts2export.engine import decode_for_diff

    old, new = decode_for_diff(r.original or b""), decode_for_diff(r.new or b"")
    path = r.path.replace("\\", "/")
    lines = list(difflib.unified_diff(old.splitlines(keepends=True), new.splitlines(keepends=True), f"a/{path}", f"b/{path}"))
    out = []
    for line in lines:
        if not line.endswith("\n"):
            line += "\n\\ No newline at end of file\n"
        out.append(line)
    return "".join(out)
