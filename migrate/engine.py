"""The codemod engine: pre-filter, parse, run rules, apply fixes, verify, report.

The engine knows rules only through :mod:`ts2export.registry`; it never names one.
"""

from __future__ import annotations

import bisect
import hashlib
import os
import re
from concurrent.futures import ProcessPoolExecutor
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Iterable, Sequence

import libcst as cst
from libcst.metadata import MetadataWrapper, ParentNodeProvider, PositionProvider, ScopeProvider

from ts2export.model.decision import Decision, FileDecision, ScanFinding
from ts2export.model.program import Program
from ts2export.registry import AnyRule, matches_selector, select_rules
from ts2export.rule import Applicability, Finding, Fix, ProgramView, Rule, RuleContext, TextRule, defs_from

MAX_FIX_ROUNDS = 8

_SUPPRESS = re.compile(r"(?:#|//)\s*ts2export:\s*ignore(?:\[([^\]]*)\])?", re.IGNORECASE)


@dataclass
class Options:
    """What a run does. Picklable: sent to worker processes."""

    select: tuple[str, ...] = ()
    ignore: tuple[str, ...] = ()
    fix: str | None = None  # None (report), "safe" or "unsafe"
    rule_options: dict = field(default_factory=dict)
    plan: str = "safe"  # when only checking: the fix mode whose held-back fixes are reported
    external_readers: bool = False  # rewrite readers of artifacts that no file of the run writes
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


# --------------------------------------------------------------------------------------------
# suppressions


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


# --------------------------------------------------------------------------------------------
# analysis of one Python module


def _analyze(
    module: cst.Module, path: str, source: str, rules: Sequence[type[Rule]], options: Options,
    view: ProgramView | None = None,
) -> tuple[list[Finding], int, MetadataWrapper]:
    wrapper = MetadataWrapper(module, unsafe_skip_copy=True)
    full = os.environ.get("TS2EXPORT_FULL_METADATA") == "1"  # the reference path (see RuleContext)
    ctx = RuleContext(path=path, source=source, options=options.rule_options, program=view or ProgramView(),
                      full_metadata=full)
    instances = [r(ctx) for r in rules]
    wrapper.visit_batched(instances)
    findings: list[Finding] = []
    if not full and not any(rule.findings for rule in instances):
        return findings, 0, wrapper  # positions and parents are full walks of the tree: only for findings
    positions = wrapper.resolve(PositionProvider)
    parents = wrapper.resolve(ParentNodeProvider)
    for rule in instances:
        for node, message, fix, appl in rule.findings:
            pos = positions[node]
            defs = defs_from(node if isinstance(node, (cst.FunctionDef, cst.ClassDef)) else parents.get(node), parents.get)
            spans = ()
            if fix is not None:
                spans = tuple(((positions[e.node].start.line, positions[e.node].start.column),
                               (positions[e.node].end.line, positions[e.node].end.column),
                               _replacement_code(module, e.replacement))
                              for e in fix.edits if e.node in positions)
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
                )
            )
    findings = _drop_covered_fallbacks(findings)
    table = suppressions(source)
    kept = [f for f in findings if not _is_suppressed(f, table)]
    return kept, len(findings) - len(kept), wrapper


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


# --------------------------------------------------------------------------------------------
# fixes


class _ApplyEdits(cst.CSTTransformer):
    def __init__(self, edits: dict[int, object]) -> None:
        super().__init__()
        self.edits = edits

    def on_leave(self, original_node, updated_node):  # type: ignore[override]
        replacement = self.edits.get(id(original_node))
        return updated_node if replacement is None else replacement


def _import_bindings(wrapper: MetadataWrapper) -> dict[tuple[str, str], int]:
    """(import statement code, bound name) -> number of references, over all scopes."""
    module = wrapper.module
    usage: dict[tuple[str, str], int] = {}
    for scope in set(wrapper.resolve(ScopeProvider).values()):
        if scope is None:
            continue
        for assignment in scope.assignments:
            node = getattr(assignment, "node", None)
            if isinstance(node, (cst.Import, cst.ImportFrom)):
                key = (module.code_for_node(node), assignment.name)
                usage[key] = usage.get(key, 0) + len(assignment.references)
    return usage


def _unused_import_removals(before: dict, after_wrapper: MetadataWrapper) -> list[tuple[str, str | None, str | None]]:
    """Imports used before the fixes and unused after them: (module, obj, asname) to remove."""
    after = _import_bindings(after_wrapper)
    module = after_wrapper.module
    removals = []
    for stmt in _all_imports(module):
        code = module.code_for_node(stmt)
        if isinstance(stmt.names, cst.ImportStar):
            continue
        for alias in stmt.names:
            bound = alias.evaluated_alias or alias.evaluated_name
            if isinstance(stmt, cst.Import) and alias.asname is None:
                bound = alias.evaluated_name
            key = (code, bound)
            if before.get(key, 0) > 0 and after.get(key, 0) == 0:
                if isinstance(stmt, cst.Import):
                    removals.append((alias.evaluated_name, None, alias.evaluated_alias))
                else:
                    mod = cst.Module(body=[]).code_for_node(stmt.module) if stmt.module else ""
                    mod = "." * len(stmt.relative) + mod
                    removals.append((mod, alias.evaluated_name, alias.evaluated_alias))
    return removals


def _all_imports(module: cst.Module) -> list[cst.Import | cst.ImportFrom]:
    found: list = []

    class _V(cst.CSTVisitor):
        def visit_Import(self, node: cst.Import) -> None:
            found.append(node)

        def visit_ImportFrom(self, node: cst.ImportFrom) -> None:
            found.append(node)

    module.visit(_V())
    return found


def _manage_imports(old_usage: dict, module: cst.Module, fixes: Sequence[Fix]) -> cst.Module:
    # imported here: libcst.codemod loads libcst.matchers (about a second), needed only to fix
    from libcst.codemod import CodemodContext
    from libcst.codemod.visitors import AddImportsVisitor, RemoveImportsVisitor

    context = CodemodContext()
    for fix in fixes:
        for imp in fix.imports:
            AddImportsVisitor.add_needed_import(context, imp.module, imp.name, imp.asname)
    wrapper = MetadataWrapper(module, unsafe_skip_copy=True)
    for mod, obj, asname in _unused_import_removals(old_usage, wrapper):
        RemoveImportsVisitor.remove_unused_import(context, mod, obj, asname)
    if context.scratch.get(AddImportsVisitor.CONTEXT_KEY):
        module = AddImportsVisitor(context).transform_module(module)
    if context.scratch.get(RemoveImportsVisitor.CONTEXT_KEY):
        first_before = _first_statement_code(module)
        module = RemoveImportsVisitor(context).transform_module(module)
        if module.body and _first_statement_code(module) != first_before:
            # The file's first statement went: don't leave the file opening with blank lines.
            first = module.body[0]
            lines = list(first.leading_lines)
            while lines and lines[0].comment is None:
                lines.pop(0)
            module = module.with_changes(body=[first.with_changes(leading_lines=lines), *module.body[1:]])
    return module


def _first_statement_code(module: cst.Module) -> str | None:
    if not module.body:
        return None
    first = module.body[0]
    return module.code_for_node(first.with_changes(leading_lines=()))


def _compiles(module: cst.Module, path: str) -> str | None:
    """None if the module's code parses and compiles, else why not."""
    code = module.code
    try:
        cst.parse_module(code)
        compile(code, path, "exec", dont_inherit=True)
    except (cst.ParserSyntaxError, SyntaxError, ValueError) as exc:
        return str(exc).splitlines()[0] if str(exc) else type(exc).__name__
    return None


def _overlaps(a: tuple, b: tuple) -> bool:
    return a[0] < b[1] and b[0] < a[1]


def _overlap_groups(spans_of: list[list[tuple]]) -> list[int]:
    """A group number for each fix (a list of spans), such that fixes whose spans overlap are in
    one group: one sweep over the spans sorted by start. Which fix of a round waits for the next
    depends only on the fixes of its group, so each is checked against its group alone (a file
    with 150,000 fixes, none overlapping, no longer compares every pair)."""
    parent = list(range(len(spans_of)))

    def find(i: int) -> int:
        while parent[i] != i:
            parent[i] = parent[parent[i]]
            i = parent[i]
        return i

    events = sorted((s[0], s[1], i) for i, spans in enumerate(spans_of) for s in spans)
    cluster_end, cluster_owner = None, -1
    for start, end, i in events:
        if cluster_end is not None and start < cluster_end:  # overlaps the cluster (see _overlaps)
            parent[find(i)] = find(cluster_owner)
            cluster_end = max(cluster_end, end)
        else:
            cluster_end, cluster_owner = end, i
    return [find(i) for i in range(len(spans_of))]


def _first_come(spans_of: list[list[tuple]]) -> list[int]:
    """The fixes (lists of spans) that overlap no fix before them that was taken, in order: a
    fix is checked against the taken fixes of its overlap group only."""
    group = _overlap_groups(spans_of)
    taken: dict[int, list[tuple]] = {}  # a group's taken spans
    out: list[int] = []
    for i, spans in enumerate(spans_of):
        mine = taken.setdefault(group[i], [])
        if any(_overlaps(s, t) for s in spans for t in mine):
            continue
        mine.extend(spans)
        out.append(i)
    return out


def _apply_round(
    wrapper: MetadataWrapper, findings: list[Finding], path: str, dropped: set, notes: list[str]
) -> tuple[cst.Module | None, list[Finding]]:
    """Apply non-overlapping fixes of one round; returns the new module and the findings fixed."""
    positions = wrapper.resolve(PositionProvider)
    usage = _import_bindings(wrapper)

    def span(fix: Fix) -> list[tuple]:
        out = []
        for e in fix.edits:
            p = positions[e.node]
            out.append(((p.start.line, p.start.column), (p.end.line, p.end.column)))
        return out

    # Outer fixes first: they copy the code of constructs nested in them, so a nested finding keeps
    # its anchor (its code) for the next round, and the program model's decision still names it.
    def extent(f: Finding) -> tuple:
        spans = span(f.fix)
        first = min(s[0] for s in spans) if spans else (0, 0)
        last = max(s[1] for s in spans) if spans else (0, 0)
        return (-(last[0] - first[0]), -(last[1] - first[1] if last[0] == first[0] else 0), first)

    ordered = [(f, span(f.fix)) for f in sorted(findings, key=extent)]
    accepted = [ordered[i] for i in _first_come([spans for _, spans in ordered])]  # the others: next round
    if not accepted:
        return None, []

    def build(chosen: list[Finding]) -> cst.Module:
        edits = {id(e.node): e.replacement for f in chosen for e in f.fix.edits}
        new = wrapper.module.visit(_ApplyEdits(edits))
        return _manage_imports(usage, new, [f.fix for f in chosen])

    chosen = [f for f, _ in accepted]
    try:
        new = build(chosen)
        problem = _compiles(new, path)
    except Exception as exc:  # a rule built an invalid tree
        problem = f"{type(exc).__name__}: {exc}"
    if problem is None:
        return new, chosen
    # Find the culprits one by one; keep every fix that compiles on its own and with the others.
    good: list[Finding] = []
    for f in chosen:
        try:
            candidate = build([*good, f])
            problem = _compiles(candidate, path)
        except Exception as exc:
            problem = f"{type(exc).__name__}: {exc}"
        if problem is None:
            good.append(f)
        else:
            dropped.add(_fix_key(f, wrapper.module))
            notes.append(f"{path}:{f.line}:{f.column}: {f.rule_id} fix not applied: the result would not compile ({problem})")
    if not good:
        return None, []
    return build(good), good


def _fix_key(f: Finding, module: cst.Module) -> tuple:
    return (f.rule_id, f.message, tuple(module.code_for_node(e.node) for e in f.fix.edits))


# --------------------------------------------------------------------------------------------
# one file


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
    # libcst drops a file's last newline when it is a lone "\r" (old Mac line ends): keep what it
    # drops at the end, and refuse to rewrite a file it would change anywhere else.
    code = module.code  # rendered once here and reused by the first round (a full walk of the tree)
    rendered = code.encode(module.encoding)
    lost = data[len(rendered):] if rendered != data and data.startswith(rendered) else b""
    if rendered + lost != data:
        result.error = "cannot rewrite faithfully: libcst does not reproduce this file byte for byte"
        return
    dropped: set = set()
    changed = False
    findings: list[Finding] = []
    decision = decision or FileDecision({}, {}, {})
    for _round in range(MAX_FIX_ROUNDS + 1):
        findings, suppressed, wrapper = _analyze(module, path, code, rules, options, view)
        if _round == 0:
            result.suppressed = suppressed
        for f in findings:
            _decide(f, decision, options.mode)
        candidates = [f for f in findings if not f.held and _allowed(f, options.fix) and _fix_key(f, module) not in dropped]
        if not candidates or _round == MAX_FIX_ROUNDS:
            break
        new, applied = _apply_round(wrapper, candidates, path, dropped, result.notes)
        if new is None:
            continue  # every candidate was dropped; analyse again so the findings are current
        for f in applied:
            f.fixed = True
        result.fixed.extend(applied)
        module = new
        code = module.code
        changed = True
    result.findings = findings
    if changed:
        result.new = module.bytes + lost


def _decide(f: Finding, decision: FileDecision, mode: str) -> None:
    """Apply the program model's decision to a finding: held back (with the reason) or not (only
    fixes that this run's mode writes are held back)."""
    f.unit = decision.units.get(f.anchor)
    if not mode_allows(f.applicability, mode):
        return
    reason = decision.held.get(f.anchor)
    if reason is None:
        from ts2export.registry import rule_by_id

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
        f.fix = None  # edits hold libcst nodes: not needed past this point, costly to pickle
    if not result.changed:  # only a changed file needs its contents sent back (for diff/apply)
        result.original = result.new = None
    return result


def _run_one(args: tuple[Task, Options]) -> FileResult:
    task, options = args
    if task.data is not None:
        return process_bytes(task.data, task, options)
    return process_file(task, options)


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
    with _Workers(jobs, len(tasks)) as workers:
        return _analyze_run(tasks, options, workers, progress)


def _analyze_run(tasks: Sequence[Task], options: Options, workers: "_Workers", progress) -> Run:
    sources = _sources(tasks)
    # A file without `jit` in it gets no program view (see Program.views): its first pass runs in
    # the workers while this process builds the program model.
    early, late = [], []
    for t in tasks:
        (late if t.kind == "python" and b"jit" in sources.get(t.path, b"jit") else early).append(t)
    pending = workers.start(early, replace(options, fix=None), progress)
    program = _program(sources, options)
    views = program.views() if program is not None else {}
    late = [replace(t, view=views.get(t.path)) for t in late]
    first = sorted([*workers.run(late, replace(options, fix=None), progress), *pending()], key=lambda r: r.path)
    tasks = [*early, *late]
    if program is None:
        return Run(first, None)
    program.attach(_scan_findings(first, options.mode))
    decision = program.solve()
    excluded: dict[tuple[str, str], str] = {}
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
                _decide(f, d, options.mode)
        return Run(first, program)
    by_path = {r.path: r for r in first}
    todo = [t for t in tasks if any(mode_allows(f.applicability, options.fix) for f in by_path[t.path].findings)]
    extra: dict[tuple[str, str], str] = dict(excluded)
    results = first
    notes: dict[str, list[str]] = {}  # warnings of every attempt (a dropped fix explains a held unit)
    for _attempt in range(3):
        fixed = {r.path: r for r in workers.run([replace(t, decision=decision.for_file(t.path)) for t in todo], options)}
        for r in fixed.values():
            kept = notes.setdefault(r.path, [])
            kept.extend(n for n in r.notes if n not in kept)
            r.notes = kept
        results = [fixed.get(r.path, r) for r in first]
        for r in results:
            if r.path not in fixed:
                d = decision.for_file(r.path)
                for f in r.findings:
                    _decide(f, d, options.mode)
        missing = _unapplied(results, first, options.fix) - set(extra)
        if not missing:
            break
        extra.update({k: "its fix could not be applied in this run" for k in missing})
        again = program.solve(extra)
        if _same_holds(again, decision, extra):
            break
        decision = again
    return Run(results, program)


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


def _sources(tasks: Sequence[Task]) -> dict[str, bytes]:
    """The bytes of the run's Python files (those that cannot be read are reported by their own check)."""
    sources: dict[str, bytes] = {}
    for t in tasks:
        if t.kind != "python":
            continue
        if t.data is not None:
            sources[t.path] = t.data
            continue
        try:
            sources[t.path] = Path(t.path).read_bytes()
        except OSError:
            continue
    return sources


def _program(sources: dict[str, bytes], options: Options) -> Program | None:
    if not sources:
        return None
    recording = None
    if options.recording:
        from ts2export.recording import load_recording

        recording = load_recording(options.recording)  # the CLI has checked it loads
    return Program(sources, external_readers=options.external_readers, recording=recording)


def _keeps(rule_id: str) -> tuple[bool, bool]:
    from ts2export.registry import rule_by_id

    rule = rule_by_id(rule_id)
    return bool(getattr(rule, "keeps_torchscript", False)), bool(getattr(rule, "keeps_tracing", False))


def _scan_findings(results: Sequence[FileResult], mode: str) -> list[ScanFinding]:
    from ts2export.registry import rule_by_id

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
                fix_spans=f.fix_spans, defs=f.defs,
            ))
    return out


def _same_holds(a: Decision, b: Decision, extra: dict[tuple[str, str], str]) -> bool:
    def held(d: Decision) -> set:
        return {(p, k) for p, table in d.held.items() for k in table if (p, k) not in extra}

    return held(a) == held(b) and a.regions == b.regions


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
        results = self.pool.map(_run_one, [(t, options) for t in ordered], chunksize=chunk)

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
            results.append(_run_one((t, options)))
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
