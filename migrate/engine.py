"""The codemod engine: pre-filter, parse, run rules, apply fixes, verify, report.

The engine knows rules only through :mod:`ts2export.registry`; it never names one.
"""

from __future__ import annotations

import os
import re
from concurrent.futures import ProcessPoolExecutor
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Iterable, Sequence

import libcst as cst
from libcst.codemod import CodemodContext
from libcst.codemod.visitors import AddImportsVisitor, RemoveImportsVisitor
from libcst.metadata import MetadataWrapper, PositionProvider, ScopeProvider

from ts2export.registry import AnyRule, matches_selector, select_rules
from ts2export.rule import Applicability, Fact, Finding, Fix, Rule, RuleContext, TextRule

MAX_FIX_ROUNDS = 8

_SUPPRESS = re.compile(r"(?:#|//)\s*ts2export:\s*ignore(?:\[([^\]]*)\])?", re.IGNORECASE)


@dataclass
class Options:
    """What a run does. Picklable: sent to worker processes."""

    select: tuple[str, ...] = ()
    ignore: tuple[str, ...] = ()
    fix: str | None = None  # None (report), "safe" or "unsafe"
    rule_options: dict = field(default_factory=dict)


@dataclass
class FileResult:
    path: str
    findings: list[Finding] = field(default_factory=list)  # left for a person (or not yet fixed)
    fixed: list[Finding] = field(default_factory=list)
    suppressed: int = 0
    error: str | None = None  # the file could not be read/decoded/parsed
    notes: list[str] = field(default_factory=list)  # e.g. fixes dropped because the result did not compile
    facts: list[Fact] = field(default_factory=list)  # for the repository-wide report (as first seen)
    original: bytes | None = None
    new: bytes | None = None  # set when fixing changed the file

    @property
    def changed(self) -> bool:
        return self.new is not None and self.new != self.original


@dataclass(frozen=True)
class Task:
    path: str
    kind: str
    ignored: tuple[str, ...] = ()  # per-file ignores


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
    module: cst.Module, path: str, source: str, rules: Sequence[type[Rule]], options: Options, facts: list | None = None
) -> tuple[list[Finding], int, MetadataWrapper]:
    wrapper = MetadataWrapper(module, unsafe_skip_copy=True)
    ctx = RuleContext(path=path, source=source, options=options.rule_options)
    instances = [r(ctx) for r in rules]
    wrapper.visit_batched(instances)
    positions = wrapper.resolve(PositionProvider)
    findings: list[Finding] = []
    for rule in instances:
        for node, message, fix, appl in rule.findings:
            pos = positions[node]
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
                )
            )
    if facts is not None:
        for rule in instances:
            for node, kind, key in rule.facts:
                pos = positions[node]
                facts.append(Fact(rule.id, kind, key, path, pos.start.line, pos.start.column + 1))
    findings = _drop_covered_fallbacks(findings)
    table = suppressions(source)
    kept = [f for f in findings if not _is_suppressed(f, table)]
    return kept, len(findings) - len(kept), wrapper


def _drop_covered_fallbacks(findings: list[Finding]) -> list[Finding]:
    specific = [f for f in findings if not f.fallback]
    if len(specific) == len(findings):
        return findings

    def covered(f: Finding) -> bool:
        start = (f.line, f.column)
        return any((s.line, s.column) <= start < (s.end_line, s.end_column) for s in specific)

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

    accepted: list[tuple[Finding, list[tuple]]] = []
    for f in findings:
        spans = span(f.fix)
        if any(_overlaps(s, t) for _, ts in accepted for s in spans for t in ts):
            continue  # next round
        accepted.append((f, spans))
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
    if f.fix is None or mode is None:
        return False
    if f.applicability is Applicability.SAFE:
        return True
    return f.applicability is Applicability.UNSAFE and mode == "unsafe"


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
        for t in rule.triggers:
            if t.encode() in data:
                return True
    return False


def process_python(data: bytes, path: str, rules: Sequence[type[Rule]], options: Options, result: FileResult) -> None:
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
    rendered = module.bytes
    lost = data[len(rendered):] if rendered != data and data.startswith(rendered) else b""
    if rendered + lost != data:
        result.error = "cannot rewrite faithfully: libcst does not reproduce this file byte for byte"
        return
    dropped: set = set()
    changed = False
    findings: list[Finding] = []
    for _round in range(MAX_FIX_ROUNDS + 1):
        findings, suppressed, wrapper = _analyze(module, path, module.code, rules, options, result.facts if _round == 0 else None)
        if _round == 0:
            result.suppressed = suppressed
        candidates = [f for f in findings if _allowed(f, options.fix) and _fix_key(f, module) not in dropped]
        if not candidates or _round == MAX_FIX_ROUNDS:
            break
        new, applied = _apply_round(wrapper, candidates, path, dropped, result.notes)
        if new is None:
            continue  # every candidate was dropped; analyse again so the findings are current
        for f in applied:
            f.fixed = True
        result.fixed.extend(applied)
        module = new
        changed = True
    result.findings = findings
    if changed:
        result.new = module.bytes + lost


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
            process_python(data, task.path, [r for r in rules if issubclass(r, Rule)], options, result)
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
    result.facts.sort(key=lambda f: (f.line, f.column, f.kind, f.key))
    for f in result.findings + result.fixed:
        f.fix = None  # edits hold libcst nodes: not needed past this point, costly to pickle
    if not result.changed:  # only a changed file needs its contents sent back (for diff/apply)
        result.original = result.new = None
    return result


def _run_one(args: tuple[Task, Options]) -> FileResult:
    return process_file(*args)


def group_facts(results: Iterable[FileResult]) -> dict[str, list[Fact]]:
    groups: dict[str, list[Fact]] = {}
    for r in results:
        for fact in r.facts:
            groups.setdefault(fact.key, []).append(fact)
    return groups


def fact_readers(options: Options) -> set[str]:
    """Ids of the selected rules that read facts recorded in other files."""
    return {r.id for r in select_rules(options.select, options.ignore) if getattr(r, "uses_facts", False)}


def needs_facts(options: Options) -> bool:
    """Fixing with a rule that reads other files' facts needs a first, checking pass."""
    return options.fix is not None and bool(fact_readers(options))


def with_facts(options: Options, facts: dict[str, list[Fact]]) -> Options:
    return replace(options, rule_options={**options.rule_options, "facts": facts})


def run(tasks: Sequence[Task], options: Options, jobs: int | None = None, progress=None) -> list[FileResult]:
    """Process files, in parallel where it pays; results sorted by path.

    When fixing with rules that read facts of other files (e.g. a reader of an artifact that must not
    be migrated while its writer in another file stays TorchScript), every file is checked first."""
    readers = fact_readers(options)
    if not readers:
        return _run(tasks, options, jobs, progress)
    if options.fix is not None:
        first = _run(tasks, replace(options, fix=None), jobs, None)
        return _run(tasks, with_facts(options, group_facts(first)), jobs, progress)
    # Checking: one pass, then again only the files whose fact readers have a counterpart elsewhere,
    # so that scan/check report exactly what apply will do.
    results = _run(tasks, options, jobs, progress)
    facts = group_facts(results)
    paths = {f.path for f in facts_linked(facts, readers)}
    if paths:
        again = {r.path: r for r in _run([t for t in tasks if t.path in paths], with_facts(options, facts), jobs, None)}
        results = [again.get(r.path, r) for r in results]
    return results


def facts_linked(facts: dict[str, list[Fact]], readers: set[str]) -> list[Fact]:
    """Facts recorded by fact-reading rules whose key also has a fact in another file."""
    return [f for group in facts.values() for f in group
            if f.rule_id in readers and any(g.path != f.path for g in group)]


def _run(tasks: Sequence[Task], options: Options, jobs: int | None, progress) -> list[FileResult]:
    jobs = jobs or os.cpu_count() or 1
    results: list[FileResult] = []
    if jobs <= 1 or len(tasks) < 4:
        for t in tasks:
            results.append(process_file(t, options))
            if progress:
                progress()
    else:
        with ProcessPoolExecutor(max_workers=min(jobs, len(tasks))) as pool:
            chunk = max(1, len(tasks) // (jobs * 8))
            for r in pool.map(_run_one, [(t, options) for t in tasks], chunksize=chunk):
                results.append(r)
                if progress:
                    progress()
    results.sort(key=lambda r: r.path)
    return results
