"""One file: a textual pre-filter, a decode and compile check, a libcst parse, then rounds: every
selected rule runs in one batched visit; suppressed findings are dropped, and so are catch-all
findings that a specific rule covers; in fix mode the program model's decision is applied and the
fixes it lets through are written (:mod:`.fixes`), until nothing applicable is left."""

from __future__ import annotations

import bisect
import hashlib
import os
import re
from dataclasses import replace
from pathlib import Path
from typing import TYPE_CHECKING, Iterable, Sequence

import libcst as cst
from libcst.metadata import MetadataWrapper, ParentNodeProvider, PositionProvider

from ts2export.engine import notebooks
from ts2export.engine.fixes import apply_round, fix_key
from ts2export.engine.registry import matches_selector, select_rules
from ts2export.engine.tasks import FileResult, Options, Task, mode_allows
from ts2export.model.decision import FileDecision
from ts2export.rule.metadata import StatementPositions, parent_recorder
from ts2export.rule.walk import wrapper_walk_batched
from ts2export.rule import Applicability, Finding, ProgramView, Rule, RuleContext, TextRule, defs_from

if TYPE_CHECKING:
    from ts2export.engine.registry import AnyRule


MAX_FIX_ROUNDS = 8
_SUPPRESS = re.compile(r"(?:#|//)\s*ts2export:\s*ignore(?:\[([^\]]*)\])?", re.IGNORECASE)


def suppressions(source: str) -> dict[int, set[str] | None]:
    """Line (1-based) -> rule ids suppressed there (None: all)."""
    out: dict[int, set[str] | None] = {}
    if "ts2export" not in source:
        return out
    for lineno, line in enumerate(source.splitlines(), start=1):
        m = _SUPPRESS.search(line)
        if not m:
            continue
        if m.group(1) is None:
            out[lineno] = None
        else:
            ids = {s.strip().upper() for s in m.group(1).split(",") if s.strip()}
            out[lineno] = ids or None
    return out


def _is_suppressed(f: Finding, table: dict[int, set[str] | None]) -> bool:
    for line in {f.line, f.end_line} if f.end_line else {f.line}:
        if line in table:
            ids = table[line]
            if ids is None or matches_selector(f.rule_id, ids):
                return True
    return False


def _analyze(
    module: cst.Module, path: str, source: str, rules: Sequence[type[Rule]], options: Options,
    view: ProgramView | None = None,
) -> tuple[list[Finding], int, MetadataWrapper, dict | None]:
    wrapper = MetadataWrapper(module, unsafe_skip_copy=True)
    full = os.environ.get("TS2EXPORT_FULL_METADATA") == "1"  # the reference path (see RuleContext)
    ctx = RuleContext(path=path, source=source, options=options.rule_options, program=view or ProgramView(),
                      full_metadata=full, parents=None if full else {})
    instances = [r(ctx) for r in rules]
    if full:
        wrapper.visit_batched(instances)
    else:
        enter, leave = parent_recorder(ctx.parents)
        wrapper_walk_batched(wrapper, instances, before_visit=enter, after_leave=leave)  # libcst's visit, reading only
    findings: list[Finding] = []
    if not full and not any(rule.findings for rule in instances):
        return findings, 0, wrapper, None  # positions are a full walk of the tree: only for findings
    # positions: those of the statements with findings (a rule that asked for positions has them all)
    positions = wrapper.resolve(PositionProvider) if full else ctx.positions or StatementPositions(module, ctx.parents)
    # the visit has entered every node: its record is the parent provider's map (which the full path computes)
    parents = wrapper.resolve(ParentNodeProvider) if full else ctx.parents
    for rule in instances:
        for node, message, fix, appl, alternative in rule.findings:
            pos = positions[node]
            subject = rule.about.get(id(node), node)
            defs = defs_from(subject if isinstance(subject, (cst.FunctionDef, cst.ClassDef)) else parents.get(subject),
                             parents.get)
            spans = _spans(module, positions, fix) if fix is not None else ()
            findings.append(
                Finding(
                    rule_id=rule.id,
                    path=path,
                    line=pos.start.line,
                    column=pos.start.column + 1,
                    end_line=pos.end.line,
                    end_column=pos.end.column + 1,
                    message=message,
                    applicability=appl,
                    fallback=rule.fallback,
                    fix=fix,
                    anchor=anchor(rule.id, defs, module.code_for_node(node)),
                    defs=defs,
                    fix_spans=spans,
                    alternative=alternative[0] if alternative is not None else None,
                    alternative_message=alternative[1] if alternative is not None else None,
                    alternative_spans=_spans(module, positions, alternative[0]) if alternative is not None else None,
                )
            )
    findings = _drop_covered_fallbacks(findings)
    table = suppressions(source)
    kept = [f for f in findings if not _is_suppressed(f, table)]
    return kept, len(findings) - len(kept), wrapper, positions


def _spans(module: cst.Module, positions, fix) -> tuple:
    """((line, col), (end_line, end_col), code written) of each node a fix replaces."""
    return tuple(((positions[e.node].start.line, positions[e.node].start.column),
                  (positions[e.node].end.line, positions[e.node].end.column),
                  _replacement_code(module, e.replacement))
                 for e in fix.edits if e.node in positions)


def _replacement_code(module: cst.Module, replacement) -> str:
    """The code an edit writes, without whitespace (to tell whether it keeps a construct)."""
    if isinstance(replacement, cst.RemovalSentinel):
        return ""
    nodes = replacement.nodes if isinstance(replacement, cst.FlattenSentinel) else [replacement]
    return re.sub(r"\s+", "", "".join(module.code_for_node(n) for n in nodes))


def anchor(rule_id: str, defs: Sequence[str], code: str) -> str:
    """A name for a finding that survives fixes elsewhere in the file: its rule, the top-level
    definition around it and its own code (whitespace aside). Identical constructs in one
    top-level definition share it, and are held back together."""
    top = defs[-1] if defs else ""
    digest = hashlib.sha1(re.sub(r"\s+", "", code).encode("utf-8", "surrogatepass")).hexdigest()[:16]
    return f"{rule_id}:{top}:{digest}"


def _drop_covered_fallbacks(findings: list[Finding]) -> list[Finding]:
    specific = sorted(((s.line, s.column), (s.end_line, s.end_column)) for s in findings if not s.fallback)
    if len(specific) == len(findings):
        return findings
    # A fallback finding is covered when a specific one starts at or before it and ends after its
    # start: the furthest end among the specific findings that start at or before it tells.
    starts = [start for start, _ in specific]
    furthest: list[tuple[int, int]] = []
    for _, end in specific:
        furthest.append(max(end, furthest[-1]) if furthest else end)

    def covered(f: Finding) -> bool:
        start = (f.line, f.column)
        i = bisect.bisect_right(starts, start) - 1
        return i >= 0 and start < furthest[i]

    return [f for f in findings if not f.fallback or not covered(f)]


def _allowed(f: Finding, mode: str | None) -> bool:
    return f.fix is not None and mode_allows(f.applicability, mode)


def decode_for_diff(data: bytes) -> str:
    """Text of a Python file in its declared encoding (BOM and PEP 263 cookie honoured)."""
    import io
    import tokenize

    try:
        encoding, _ = tokenize.detect_encoding(io.BytesIO(data).readline)
    except SyntaxError:
        encoding = "utf-8"
    return data.decode(encoding, errors="surrogateescape")


def prefilter(data: bytes, rules: Iterable[AnyRule]) -> bool:
    """Cheap textual test: can this file contain anything the rules look for?"""
    for rule in rules:
        if any(t.encode() in data for t in rule.triggers) and all(
                any(s.encode() in data for s in group) for group in getattr(rule, "also_requires", ())):
            return True
    return False


def process_python(data: bytes, path: str, rules: Sequence[type[Rule]], options: Options, result: FileResult,
                   decision: FileDecision | None = None, view: ProgramView | None = None) -> None:
    import io
    import tokenize

    try:
        encoding, _ = tokenize.detect_encoding(io.BytesIO(data).readline)
        text = data.decode(encoding)
    except (SyntaxError, UnicodeDecodeError, LookupError) as exc:
        reason = exc.msg if isinstance(exc, SyntaxError) else str(exc)
        result.error = f"cannot decode: {reason} (add a PEP 263 coding comment or save it as UTF-8)"
        return
    try:
        compile(text.lstrip("\ufeff"), path, "exec", dont_inherit=True)
    except SyntaxError as exc:
        result.error = f"syntax error at line {exc.lineno}, column {exc.offset}: {exc.msg}"
        return
    except ValueError as exc:
        result.error = f"cannot compile: {exc}"
        return
    except (MemoryError, RecursionError):  # CPython's parser gives up on very deep nesting this way
        result.error = "too deeply nested for the parser"
        return
    try:
        module = cst.parse_module(data)
    except (cst.ParserSyntaxError, SyntaxError) as exc:
        where = f"line {exc.raw_line}, column {exc.raw_column + 1}: {exc.message}" if isinstance(exc, cst.ParserSyntaxError) else str(exc)
        result.error = f"cannot parse (libcst) at {where}"
        return
    # The first round reads the text as it came: libcst renders it back byte for byte, which is
    # checked below where the file has findings (rendering is a full walk of the tree, and a file
    # without findings is neither rewritten nor reported).
    code = text
    lost = b""
    dropped: set = set()
    changed = False
    findings: list[Finding] = []
    decision = decision or FileDecision({}, {}, {})
    decided: set = set()  # the fixes the program model decided: those of the file as it came
    unit_sites = {r.id for r in rules if r.unit_site}
    for _round in range(MAX_FIX_ROUNDS + 1):
        findings, suppressed, wrapper, positions = _analyze(module, path, code, rules, options, view)
        if _round == 0 and (findings or suppressed):  # positions are computed for these
            rendered_code = getattr(positions, "code", None)
            if rendered_code is None:
                rendered_code = module.code
            # libcst drops a file's last newline when it is a lone "\r" (old Mac line ends): keep what
            # it drops at the end, and refuse to rewrite a file it would change anywhere else.
            rendered = rendered_code.encode(module.encoding)
            lost = data[len(rendered):] if rendered != data and data.startswith(rendered) else b""
            if rendered + lost != data:
                result.error = "cannot rewrite faithfully: libcst does not reproduce this file byte for byte"
                return
            if rendered_code != code:  # what it dropped: analyse the code as libcst renders it, as every round after
                code = rendered_code
                findings, suppressed, wrapper, positions = _analyze(module, path, code, rules, options, view)
        if _round == 0:
            result.suppressed = suppressed
            decided = {place for f in findings if _allowed(f, options.fix) for place in _places(f)}
        for f in findings:
            decide(f, decision, options.mode)
            if (_round and f.rule_id in unit_sites and not f.held and _allowed(f, options.fix)
                    and not decided.intersection(_places(f))):
                # A call site whose fix other fixes of this run made possible: the program model
                # never saw it fixable, so its unit was not decided with it. The next run decides it.
                f.held = "its fix became possible only after other fixes of this run: run apply again"
        candidates = [f for f in findings if not f.held and _allowed(f, options.fix) and fix_key(f, module) not in dropped]
        if not candidates or _round == MAX_FIX_ROUNDS:
            break
        new, applied, new_code = apply_round(wrapper, candidates, path, dropped, result.notes, positions)
        if new is None:
            continue  # every candidate was dropped; analyse again so the findings are current
        for f in applied:
            f.fixed = True
        result.fixed.extend(applied)
        module = new
        code = new_code if new_code is not None else module.code
        changed = True
    result.findings = findings
    if changed:
        result.new = module.bytes + lost


def _places(f: Finding) -> tuple:
    """How a fix is known across the rounds of one file: its anchor, and its rule in its top-level
    definition (a fix around it may change its code, and so its anchor)."""
    return (f.anchor, (f.rule_id, f.defs[-1:]))


def decide(f: Finding, decision: FileDecision, mode: str) -> None:
    """Apply the program model's decision to a finding: held back (with the reason) or not (only
    fixes that this run's mode writes are held back)."""
    f.unit = decision.units.get(f.anchor)
    if not mode_allows(f.applicability, mode):
        return
    if f.anchor in decision.switched and f.alternative_spans is not None:
        f.switch(decision.switched[f.anchor])  # the program model chose its second fix
    reason = decision.held.get(f.anchor)
    if reason is None:
        from ts2export.engine.registry import rule_by_id

        rule = rule_by_id(f.rule_id)
        reason = decision.region_hold(f.defs, getattr(rule, "keeps_torchscript", False), getattr(rule, "keeps_tracing", False))
    f.held = reason


def process_text(data: bytes, path: str, rules: Sequence[type[TextRule]], options: Options, result: FileResult) -> None:
    text = data.decode("utf-8", errors="replace")
    table = suppressions(text)
    ctx = RuleContext(path=path, source=text, options=options.rule_options)
    for rule_cls in rules:
        for tf in rule_cls(ctx).check(text):
            f = Finding(rule_cls.id, path, tf.line, tf.column, tf.message, Applicability.NONE, end_line=tf.line)
            if _is_suppressed(f, table):
                result.suppressed += 1
            else:
                result.findings.append(f)


def process_file(task: Task, options: Options) -> FileResult:
    """Check (and, in fix mode, fix in memory) one file. Never raises for a user's file."""
    try:
        data = Path(task.path).read_bytes()
    except OSError as exc:
        return FileResult(path=task.path, error=f"cannot read: {exc.strerror or exc}")
    return process_bytes(data, task, options)


def process_bytes(data: bytes, task: Task, options: Options) -> FileResult:
    """Check (and fix, in memory) the contents of one file."""
    if task.kind == "notebook":
        return process_notebook(data, task, options)
    result = FileResult(path=task.path, original=data)
    rules = [r for r in select_rules(options.select, options.ignore + task.ignored) if task.kind in r.file_kinds]
    rules = [r for r in rules if prefilter(data, (r,))]  # only the rules this file can trigger
    if not rules:
        return result
    try:
        if task.kind == "python":
            process_python(data, task.path, [r for r in rules if issubclass(r, Rule)], options, result,
                           task.decision, task.view)
        else:
            process_text(data, task.path, [r for r in rules if issubclass(r, TextRule)], options, result)
    except RecursionError:
        result.error = "too deeply nested for the parser"
    except Exception as exc:  # a bug in a rule must not stop the run or hide the file
        result.error = f"internal error while checking ({type(exc).__name__}: {exc}); please report it"
        if os.environ.get("TS2EXPORT_DEBUG"):
            import traceback

            result.notes.append(traceback.format_exc())
        result.findings, result.new = [], None
    result.findings.sort(key=Finding.sort_key)
    result.fixed.sort(key=Finding.sort_key)
    for f in result.findings + result.fixed:
        f.fix = f.alternative = None  # edits hold libcst nodes: not needed past this point, costly to pickle
    if not result.changed:  # only a changed file needs its contents sent back (for diff/apply)
        result.original = result.new = None
    return result


def process_notebook(data: bytes, task, options):
    """Check (and fix, in memory) a notebook: its module is checked as a Python file under the
    notebook's path; a fixed module is written back into the cells (:func:`ts2export.engine.notebooks.write`)."""
    result = FileResult(path=task.path, original=data)
    try:
        nb = notebooks.read(data)
    except notebooks.NotebookError as exc:
        result.error = str(exc)
        return result
    code = nb.code.encode("utf-8")
    inner = process_bytes(code, replace(task, kind="python", data=code), options)
    result.findings, result.fixed, result.suppressed = inner.findings, inner.fixed, inner.suppressed
    result.error, result.notes = inner.error, inner.notes
    if result.error:  # "line N" of the module: the cell and its line
        result.error = re.sub(r"\bline (\d+)", lambda m: "cell {}, line {}".format(*nb.place(int(m.group(1)))), result.error)
    result.cell_starts = tuple(nb.starts)
    rules = [r for r in select_rules(options.select, options.ignore + task.ignored) if "python" in r.file_kinds]
    broken = [c.error for c in nb.cells if c.error]
    mentions = [c.error for c in nb.cells if c.error and prefilter(c.text.encode("utf-8"), rules)]
    if mentions:  # TorchScript may remain there: an error, as for a file that does not parse
        result.error = "; ".join(([result.error] if result.error else []) + mentions)
    result.notes.extend(e for e in broken if e not in mentions)
    if inner.changed:
        try:
            result.new = notebooks.write(nb, data, inner.new.decode("utf-8"))
        except notebooks.NotebookError as exc:
            result.error = str(exc)
            for f in result.fixed:
                f.fixed = False
            result.findings, result.fixed = sorted(result.findings + result.fixed, key=lambda f: f.sort_key()), []
    if not result.changed:
        result.original = result.new = None
    return result


def run_one(args: tuple[Task, Options]) -> FileResult:
    task, options = args
    if task.data is not None:
        return process_bytes(task.data, task, options)
    return process_file(task, options)
