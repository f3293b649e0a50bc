"""The ``ts2export`` command line. The only place that knows both wings (source and artifact)."""

from __future__ import annotations

import os
import sys
from enum import Enum
from pathlib import Path
from typing import List, Optional

import typer

from ts2export import __version__
from ts2export.artifact.cli import register as register_artifact_commands
from ts2export.record.cli import register as register_record_command

app = typer.Typer(
    name="ts2export",
    help="Move a PyTorch code base off TorchScript: find every construct, rewrite it to torch.export, "
    "verify and lower the artifacts.\n\nExit codes: 0 clean, 1 findings left or changes pending "
    "(or a verify mismatch), 2 usage, config, I/O or input error.",
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_enable=False,
    context_settings={"help_option_names": ["-h", "--help"]},
)


class Format(str, Enum):
    text = "text"
    json = "json"
    sarif = "sarif"
    github = "github"


EXIT_CLEAN, EXIT_FINDINGS, EXIT_ERROR = 0, 1, 2

PathsArg = typer.Argument(None, help="Files or folders to check (default: the current folder).", show_default=False)
SelectOpt = typer.Option(None, "--select", help="Rule ids or prefixes to run (repeat or comma-separate; default ALL).")
IgnoreOpt = typer.Option(None, "--ignore", help="Rule ids or prefixes to skip.")
ConfigOpt = typer.Option(None, "--config", help="pyproject.toml to read \\[tool.ts2export] from (default: the nearest one).")
JobsOpt = typer.Option(0, "--jobs", "-j", help="Parallel worker processes (default: all cores).")
FormatOpt = typer.Option(Format.text, "--format", help="Report format.")
OutputOpt = typer.Option(None, "--output", "-o", help="Write the report to this file instead of standard output.")
ProgressOpt = typer.Option(True, "--progress/--no-progress", help="Progress bar on long runs (terminal only).")
BaselineOpt = typer.Option(None, "--baseline", metavar="FILE", help="Baseline file: only findings not in it count (default: `baseline` in \\[tool.ts2export]).")
NoBaselineOpt = typer.Option(False, "--no-baseline", help="Ignore the baseline set in \\[tool.ts2export].")
UnsafeOpt = typer.Option(False, "--unsafe-fixes", help="Also apply fixes that may change behaviour (see `ts2export explain`).")
RecordingOpt = typer.Option(
    None, "--recording", metavar="FILE",
    help="A recording made by `ts2export record`: example inputs and dynamic dims from what the program did.",
)
PlanOpt = typer.Option(False, "--unsafe-fixes", help="Report what `apply --unsafe-fixes` would hold back (default: what `apply` would).")
NoCacheOpt = typer.Option(
    False, "--no-cache",
    help="Check every file again instead of reading the results of an identical earlier run from .ts2export_cache/ "
    "(also TS2EXPORT_NO_CACHE=1).",
)
ExternalOpt = typer.Option(
    None, "--external-readers/--no-external-readers",
    help="Also rewrite readers of artifacts that no checked file writes (convert those files first; "
    "default: the config's external-readers, else no).",
)


def fail(message: str, code: int = EXIT_ERROR) -> "typer.Exit":
    typer.echo(f"error: {message}", err=True)
    return typer.Exit(code)


def _split(values: Optional[List[str]]) -> list[str]:
    out: list[str] = []
    for v in values or []:
        out.extend(s.strip() for s in v.split(",") if s.strip())
    return out


def _run_engine(paths, select, ignore, config, jobs, fix, progress, plan="safe", external=None, recording=None,
                cache=False):
    """Discover, configure and run the engine; user errors exit 2 with one line. With ``cache``
    (every command but a gated apply), an identical earlier run's results are read back
    (ts2export.engine.cache)."""
    from ts2export.engine.skipped import ENGINE_KINDS, result_for

    tasks, options, max_bytes = _configure(paths, select, ignore, config, fix, plan, external, recording)
    engine_tasks = [t for t in tasks if t.kind in ENGINE_KINDS]
    compute = lambda: _with_progress(engine_tasks, options, jobs, progress)  # noqa: E731
    from ts2export.engine.cache import cache_dir, cached_run, disabled_by_env

    if cache and engine_tasks and not disabled_by_env():
        run = cached_run(engine_tasks, options, cache_dir(Path(options.rule_options["root"])), compute)
    else:
        run = compute()
    # Notebooks, broken links, files over max-file-size: one line each where TorchScript may be.
    others = [result_for(t, options, max_bytes) for t in tasks if t.kind not in ENGINE_KINDS]
    if others:
        run.results = sorted(run.results + others, key=lambda r: r.path)
    return run


def _configure(paths, select, ignore, config, fix, plan="safe", external=None, recording=None):
    """The files to check and the engine's options; user errors exit 2 with one line."""
    from ts2export.engine.config import ConfigError, load_config, per_file_ignores
    from ts2export.engine.discovery import DiscoveryError, discover
    from ts2export.engine import Options, Task
    from ts2export.engine.registry import known_selector

    given = [Path(p) for p in (paths or ["."])]
    try:
        cfg = load_config(given[0], Path(config) if config else None)
    except ConfigError as exc:
        raise fail(str(exc))
    select_ids = _split(select) or cfg.select
    ignore_ids = _split(ignore) + cfg.ignore
    per_file = [s for ids in cfg.per_file_ignores.values() for s in ids]
    for s in select_ids + ignore_ids + per_file:
        if not known_selector(s):
            raise fail(f"unknown rule id or prefix {s!r} (see `ts2export rules`)")
    try:
        files = discover(given, cfg.root, cfg.exclude)
    except DiscoveryError as exc:
        raise fail(str(exc))
    tasks = [Task(str(f.path), f.kind, per_file_ignores(f.path, cfg)) for f in files]
    options = Options(
        select=tuple(select_ids),
        ignore=tuple(ignore_ids),
        fix=fix,
        rule_options={"inputs": dict(cfg.inputs), "root": str(cfg.root), "batch_one": cfg.batch_one},
        plan=plan,
        external_readers=cfg.external_readers if external is None else external,
        migrate_unfollowable=cfg.migrate_unfollowable,
        script_wrappers=tuple(cfg.script_wrappers),
        recording=_check_recording(recording),
    )
    from ts2export.engine.skipped import set_aside_large

    # Files over max-file-size are set aside (libcst needs about a minute per megabyte).
    max_bytes = int(cfg.max_file_size * 1_000_000)
    return set_aside_large(tasks, max_bytes), options, max_bytes


def _check_recording(path) -> str | None:
    """A recording given with --recording must load: one line and exit 2 otherwise."""
    if path is None:
        return None
    from ts2export.record.recording import RecordingError, load_recording

    try:
        load_recording(path)
    except RecordingError as exc:
        raise fail(str(exc))
    return str(path)


def _with_progress(tasks, options, jobs, progress):
    """The engine's run (results and program model), with a progress bar on a terminal."""
    from ts2export.engine import analyze

    show = progress and len(tasks) >= 50 and sys.stderr.isatty() and not os.environ.get("CI")
    if not show:
        return analyze(tasks, options, jobs or None)
    from rich.progress import Progress

    with Progress(transient=True, console=_console(stderr=True)) as bar:
        task_id = bar.add_task("checking", total=len(tasks))
        return analyze(tasks, options, jobs or None, progress=lambda: bar.advance(task_id))


def _console(stderr: bool = False):
    from rich.console import Console

    return Console(stderr=stderr, highlight=False, soft_wrap=True)


def _emit(text: str, output: Optional[Path]) -> None:
    if output is None:
        sys.stdout.write(text)
        sys.stdout.flush()
        return
    from ts2export.textio import atomic_write_bytes

    try:
        atomic_write_bytes(Path(output), text.encode("utf-8"))
    except OSError as exc:
        raise fail(f"{output}: cannot write report: {exc.strerror or exc}")


def _report(results, program, fmt: Format, output: Optional[Path], table: bool) -> None:
    from ts2export.ci import output as out

    if fmt is Format.json:
        _emit(out.to_json(results, program), output)
    elif fmt is Format.sarif:
        _emit(out.to_sarif(results), output)
    elif fmt is Format.github:
        _emit(out.to_github(results), output)
    else:
        lines = [out.finding_line(f) for r in results for f in r.findings]
        text = "".join(line + "\n" for line in lines)
        holders = "".join(line + "\n" for line in out.holder_lines(results))
        if output is not None:
            _emit(text + out.summary_line(results) + "\n" + holders, output)
        else:
            _emit(text, None)
            if table and lines:
                _rule_table(results)
            if table:
                sys.stdout.write(out.artifacts_text(program, results))
                sys.stdout.write(out.entry_points_text(program))
            sys.stdout.write(out.summary_line(results) + "\n" + holders)
    _print_errors(results)


def _print_errors(results) -> None:
    from ts2export.ci.output import error_line

    for r in results:
        if r.error:
            typer.echo(error_line(r), err=True)
        for note in r.notes:
            typer.echo(f"warning: {note}", err=True)


def _rule_table(results) -> None:
    from collections import Counter

    from rich.table import Table

    from ts2export.engine.registry import rule_by_id

    counts = Counter(f.rule_id for r in results for f in r.findings)
    fixable = Counter(f.rule_id for r in results for f in r.findings if f.fixable)
    table = Table(title="Findings by rule", title_justify="left")
    for col, justify in (("rule", "left"), ("count", "right"), ("fixable", "right"), ("summary", "left")):
        table.add_column(col, justify=justify)
    for rule_id, n in sorted(counts.items()):
        rule = rule_by_id(rule_id)
        table.add_row(rule_id, str(n), str(fixable[rule_id]), rule.summary if rule else "")
    _console().print(table)


def _plan(unsafe: bool) -> str:
    return "unsafe" if unsafe else "safe"


def _print_held(results) -> None:
    held = [f for r in results for f in r.findings if f.held]
    if held:
        typer.echo(f"Held back ({len(held)}): these fixes would break code that stays TorchScript:", err=True)
        for f in held:
            typer.echo(f"  {f.where}: {f.rule_id} {f.held}", err=True)


def _exit_code(results, pending: bool) -> int:
    if any(r.error for r in results):
        return EXIT_ERROR
    return EXIT_FINDINGS if pending else EXIT_CLEAN


@app.command()
def scan(
    paths: Optional[List[str]] = PathsArg,
    select: Optional[List[str]] = SelectOpt,
    ignore: Optional[List[str]] = IgnoreOpt,
    config: Optional[Path] = ConfigOpt,
    jobs: int = JobsOpt,
    format: Format = FormatOpt,
    output: Optional[Path] = OutputOpt,
    progress: bool = ProgressOpt,
    unsafe_fixes: bool = PlanOpt,
    external_readers: Optional[bool] = ExternalOpt,
    recording: Optional[Path] = RecordingOpt,
    no_cache: bool = NoCacheOpt,
) -> None:
    """List every TorchScript construct, with a per-rule summary. Writes nothing.

    Findings whose fix `apply` would hold back (it would break code that stays TorchScript) say why.
    Exit 0 (findings are not a failure here; use `check` to gate), 2 on errors."""
    run = _run_engine(paths, select, ignore, config, jobs, None, progress, _plan(unsafe_fixes), external_readers, recording,
                      cache=not no_cache)
    _report(run.results, run.program, format, output, table=True)
    raise typer.Exit(_exit_code(run.results, pending=False))


@app.command()
def check(
    paths: Optional[List[str]] = PathsArg,
    select: Optional[List[str]] = SelectOpt,
    ignore: Optional[List[str]] = IgnoreOpt,
    config: Optional[Path] = ConfigOpt,
    jobs: int = JobsOpt,
    format: Format = FormatOpt,
    output: Optional[Path] = OutputOpt,
    progress: bool = ProgressOpt,
    unsafe_fixes: bool = PlanOpt,
    external_readers: Optional[bool] = ExternalOpt,
    recording: Optional[Path] = RecordingOpt,
    baseline: Optional[Path] = BaselineOpt,
    no_baseline: bool = NoBaselineOpt,
    update_baseline: bool = typer.Option(False, "--update-baseline", help="Rewrite the baseline without its gone entries (never adds new findings)."),
    diff_base: Optional[str] = typer.Option(None, "--diff-base", metavar="REF", help="Check only files changed against this git ref (and readers of artifacts they write)."),
    no_cache: bool = NoCacheOpt,
) -> None:
    """The CI gate: exit 0 when no TorchScript construct remains (suppressed ones aside),
    1 when some remain, 2 on usage, config or I/O errors and files that cannot be parsed.

    With a baseline (--baseline FILE, or `baseline` in \\[tool.ts2export]) only findings not in it fail."""
    from ts2export.ci import gate as g

    try:
        gate = g.Gate.load(paths, config, select, ignore)
        run = lambda p: _run_engine(p or paths, select, ignore, config or gate.cfg.source, jobs, None, progress,  # noqa: E731
                                    _plan(unsafe_fixes), external_readers, recording, cache=not no_cache)
        outcome = g.check(gate, run, diff_base, gate.baseline_path(baseline, not no_baseline), update_baseline)
    except g.GateError as exc:
        raise fail(str(exc))
    _report(outcome.results, outcome.program, format, output, table=False)
    for note in outcome.notes:  # baseline and changed-files notes: stdout in text mode, else stderr
        typer.echo(note, err=format is not Format.text or output is not None)
    raise typer.Exit(_exit_code(outcome.results, pending=any(r.findings for r in outcome.results)))


@app.command("baseline")
def record_baseline(
    paths: Optional[List[str]] = PathsArg,
    output: Optional[Path] = typer.Option(None, "--output", "-o", help="Baseline file (default: `baseline` in \\[tool.ts2export], else ts2export-baseline.json next to pyproject.toml)."),
    select: Optional[List[str]] = SelectOpt,
    ignore: Optional[List[str]] = IgnoreOpt,
    config: Optional[Path] = ConfigOpt,
    jobs: int = JobsOpt,
    progress: bool = ProgressOpt,
) -> None:
    """Record today's findings in a baseline file, so that `check --baseline` fails only on new ones.

    Entries of files outside PATH (or of rules not selected) are kept. Exit 0, 2 on errors."""
    from ts2export.ci import gate as g

    try:
        gate = g.Gate.load(paths, config, select, ignore)
        results = _run_engine(paths, select, ignore, config, jobs, None, progress).results
        _, line = g.record(gate, results, output)
    except g.GateError as exc:
        raise fail(str(exc))
    _print_errors(results)
    typer.echo(line)
    raise typer.Exit(_exit_code(results, pending=False))


class ReportFormat(str, Enum):
    html = "html"
    markdown = "markdown"


@app.command()
def report(
    paths: Optional[List[str]] = PathsArg,
    output: Optional[Path] = OutputOpt,
    format: ReportFormat = typer.Option(ReportFormat.html, "--format", help="html (one self-contained page) or markdown (a pull-request comment)."),
    baseline: Optional[Path] = BaselineOpt,
    no_baseline: bool = NoBaselineOpt,
    select: Optional[List[str]] = SelectOpt,
    ignore: Optional[List[str]] = IgnoreOpt,
    config: Optional[Path] = ConfigOpt,
    jobs: int = JobsOpt,
    progress: bool = ProgressOpt,
    no_cache: bool = NoCacheOpt,
) -> None:
    """Migration report: what is left per rule and folder, fixable vs held back, progress against the baseline.

    Writes nothing but the report. Exit 0, 2 on errors."""
    from ts2export.ci import gate as g
    from ts2export.ci.report import to_html, to_markdown

    try:
        gate = g.Gate.load(paths, config, select, ignore)
        results = _run_engine(paths, select, ignore, config, jobs, None, progress, cache=not no_cache).results
        data = g.report_data(gate, results, gate.baseline_path(baseline, not no_baseline))
    except g.GateError as exc:
        raise fail(str(exc))
    _emit(to_html(data) if format is ReportFormat.html else to_markdown(data), output)
    _print_errors(results)
    raise typer.Exit(_exit_code(results, pending=False))


@app.command()
def diff(
    paths: Optional[List[str]] = PathsArg,
    unsafe_fixes: bool = UnsafeOpt,
    select: Optional[List[str]] = SelectOpt,
    ignore: Optional[List[str]] = IgnoreOpt,
    config: Optional[Path] = ConfigOpt,
    jobs: int = JobsOpt,
    progress: bool = ProgressOpt,
    external_readers: Optional[bool] = ExternalOpt,
    recording: Optional[Path] = RecordingOpt,
    no_cache: bool = NoCacheOpt,
) -> None:
    """Show the unified diff that `apply` would write (git apply-able when piped). Writes nothing.

    Fixes held back (they would break code that stays TorchScript) are listed on stderr with why.
    Exit 0 when nothing would change, 1 when something would, 2 on errors."""
    from ts2export.ci.output import unified_diff

    results = _run_engine(paths, select, ignore, config, jobs, _plan(unsafe_fixes), progress, external=external_readers,
                          recording=recording, cache=not no_cache).results
    changed = [r for r in results if r.changed]
    color = sys.stdout.isatty()
    console = _console() if color else None
    for r in changed:
        text = unified_diff(r)
        if console is None:
            sys.stdout.write(text)
            continue
        for line in text.splitlines():
            style = "bold" if line.startswith(("---", "+++")) else "green" if line.startswith("+") else "red" if line.startswith("-") else "cyan" if line.startswith("@@") else None
            console.print(line, style=style, markup=False)
    _print_errors(results)
    _print_held(results)
    n = sum(len(r.fixed) for r in changed)
    typer.echo(f"{len(changed)} file{'s' if len(changed) != 1 else ''} would change ({n} fix{'es' if n != 1 else ''}).", err=True)
    raise typer.Exit(_exit_code(results, pending=bool(changed)))


@app.command()
def apply(
    paths: Optional[List[str]] = PathsArg,
    unsafe_fixes: bool = UnsafeOpt,
    select: Optional[List[str]] = SelectOpt,
    ignore: Optional[List[str]] = IgnoreOpt,
    config: Optional[Path] = ConfigOpt,
    jobs: int = JobsOpt,
    progress: bool = ProgressOpt,
    external_readers: Optional[bool] = ExternalOpt,
    recording: Optional[Path] = RecordingOpt,
    baseline: Optional[Path] = BaselineOpt,
    no_baseline: bool = NoBaselineOpt,
    test: Optional[str] = typer.Option(
        None, "--test", metavar="CMD",
        help="Apply unit by unit and keep only the units under which this command (your tests, e.g. \"pytest -q\") "
        "still passes; the others are rolled back and named."),
    test_timeout: Optional[float] = typer.Option(None, "--test-timeout", metavar="SECONDS", help="Limit of one run of --test."),
    no_cache: bool = NoCacheOpt,
) -> None:
    """Write the fixes (safe ones; with --unsafe-fixes also unsafe ones) and list what is left.

    A fix that would break code that stays TorchScript (a unit that cannot migrate whole) is held
    back and listed with the reason. Exit 0 when nothing is left (with a baseline: nothing new), 1
    when findings remain for a person, 2 on errors."""
    from ts2export.ci import gate as g
    from ts2export.ci.output import finding_line, holder_lines, summary_line
    from ts2export.textio import NotRewritten, atomic_write_bytes

    try:  # the baseline is read before anything is written
        known = g.load_baseline(g.Gate.load(paths, config, select, ignore), baseline, not no_baseline)
    except g.GateError as exc:
        raise fail(str(exc))
    replays: list = []
    if test is not None:
        results, written = _gated(paths, select, ignore, config, jobs, _plan(unsafe_fixes), external_readers, recording,
                                  test, test_timeout)
    else:
        # the cache too: a result is computed from the bytes it is written over (atomic_write_bytes
        # checks them), so an identical earlier run (a `diff`, say) gives the same files
        run = _run_engine(paths, select, ignore, config, jobs, _plan(unsafe_fixes), progress,
                          external=external_readers, recording=recording, cache=not no_cache)
        results, replays = run.results, getattr(run, "replays", [])
        written = 0
    for r in results:
        if r.changed and test is None:
            try:  # only over the bytes the fixes were computed from: a newer version is never overwritten
                atomic_write_bytes(Path(r.path), r.new, expected=r.original)
                written += 1
            except OSError as exc:
                r.error = str(exc) if isinstance(exc, NotRewritten) else f"cannot write: {exc.strerror or exc}"
                # Not written: what the fixes would have done is still there, for a person or a rerun.
                for f in r.fixed:
                    f.fixed = False
                r.findings, r.fixed = sorted(r.findings + r.fixed, key=lambda f: f.sort_key()), []
        if r.fixed or r.findings:
            typer.echo(f"{r.path}: fixed {len(r.fixed)}, left {len(r.findings)}")
    left = [f for r in results for f in r.findings]
    if left:
        typer.echo("\nLeft for a person:")
        for f in left:
            typer.echo("  " + finding_line(f))
    _print_errors(results)
    nfixed = sum(len(r.fixed) for r in results)
    typer.echo(f"\nFixed {nfixed} finding{'s' if nfixed != 1 else ''} in {written} file{'s' if written != 1 else ''}. " + summary_line(results))
    for line in holder_lines(results):
        typer.echo(line)
    if replays:  # recorded proofs run again on the code written (ts2export.engine.replayed)
        counts = {v: sum(1 for r in replays if r["verdict"] == v) for v in ("proven", "failed", "not replayed")}
        typer.echo(f"Recorded proofs run again on the code written: {counts['proven']} proven, {counts['failed']} failed "
                   f"(held back), {counts['not replayed']} not replayed (the static decision stands).")
    if known is not None:
        left, note = g.new_left(known, results)
        typer.echo(note)
    raise typer.Exit(_exit_code(results, pending=bool(left)))


def _gated(paths, select, ignore, config, jobs, fix, external, recording, command, timeout):
    """`apply --test`: unit by unit, kept where the command passes (ts2export.engine.gated)."""
    from ts2export.engine.gated import GatedError, gated_apply

    from ts2export.engine.skipped import ENGINE_KINDS, result_for

    tasks, options, max_bytes = _configure(paths, select, ignore, config, fix, external=external, recording=recording)
    others = [result_for(t, options, max_bytes) for t in tasks if t.kind not in ENGINE_KINDS]
    tasks = [t for t in tasks if t.kind in ENGINE_KINDS]
    try:
        outcome = gated_apply(tasks, options, command, Path.cwd(), jobs or None, timeout,
                              echo=lambda line: typer.echo(line, err=True))
    except GatedError as exc:
        raise fail(str(exc))
    except KeyboardInterrupt:
        typer.echo("interrupted: the tree holds the last state the test command accepted", err=True)
        raise typer.Exit(130)
    if outcome.kept:
        typer.echo(f"Kept {len(outcome.kept)} unit(s) (`{command}` passes with them):")
        for unit in outcome.kept:
            typer.echo(f"  {unit}")
    if outcome.rolled_back:
        typer.echo(f"Rolled back {len(outcome.rolled_back)} unit(s) (`{command}` failed with them):")
        for unit, why in outcome.rolled_back.items():
            typer.echo(f"  {unit}: {why}")
    typer.echo(f"`{command}` ran {outcome.runs} time(s), the baseline included ({outcome.test_seconds:.1f} s; "
               f"checking and fixing the states took {outcome.analysis_seconds:.1f} s).")
    written = sum(1 for r in outcome.results if r.changed)
    return sorted(outcome.results + others, key=lambda r: r.path), written


@app.command("server")
def language_server() -> None:
    """Run the language server (LSP over standard input and output): findings as diagnostics while
    you type, fixes as code actions. See docs/editor.md."""
    import importlib.util

    if importlib.util.find_spec("pygls") is None or importlib.util.find_spec("lsprotocol") is None:
        raise fail("`ts2export server` needs pygls, which this install does not have: pip install 'ts2export[server]'")
    from ts2export.server.lsp import serve

    serve()


@app.command("rules")
def list_rules(format: Format = typer.Option(Format.text, "--format", help="text or json.")) -> None:
    """List the rules: id, name, fix applicability and summary."""
    from ts2export.engine.registry import all_rules

    rules = all_rules()
    if format is Format.json:
        import json

        typer.echo(json.dumps([{"id": r.id, "name": r.name(), "fix": r.applicability.value, "summary": r.summary} for r in rules], indent=2))
        return
    from rich.table import Table

    table = Table()
    for col in ("id", "name", "fix", "summary"):
        table.add_column(col)
    for r in rules:
        table.add_row(r.id, r.name(), r.applicability.value, r.summary)
    _console().print(table)


@app.command()
def explain(rule: str = typer.Argument(..., help="Rule id (TSX101) or name.")) -> None:
    """Print one rule's documentation."""
    from ts2export.engine.ruledocs import rule_markdown
    from ts2export.engine.registry import rule_by_id

    found = rule_by_id(rule)
    if found is None:
        raise fail(f"unknown rule {rule!r} (see `ts2export rules`)")
    text = rule_markdown(found, heading_level=1)
    if sys.stdout.isatty():
        from rich.markdown import Markdown

        _console().print(Markdown(text))
    else:
        sys.stdout.write(text)


def _version(value: bool) -> None:
    if value:
        typer.echo(f"ts2export {__version__}")
        raise typer.Exit()


@app.callback()
def _main(version: bool = typer.Option(False, "--version", callback=_version, is_eager=True, help="Print the version.")) -> None:
    """ts2export: migrate TorchScript to torch.export and ExecuTorch."""


def _recorded_artifact_inputs(recording: Path, out: Path):
    """For `migrate-artifact STORE --recording FILE`: a lookup from a store entry to an inputs file
    (`<out>/<entry's folder>/recorded.inputs.pt`: a recorded sample, else the recorded example) made
    from the calls the recorded program made on that artifact after loading it; None when it has none."""
    from ts2export.artifact.errors import ArtifactError
    from ts2export.record.recording import RecordingError, load_recording, write_verify_inputs

    try:
        rec = load_recording(recording)
    except RecordingError as exc:
        raise ArtifactError(str(exc)) from None

    def lookup(entry) -> str | None:
        found = rec.inputs_for_artifact(entry.path.resolve())
        if found is None:
            return None
        target = out / entry.output / "recorded.inputs.pt"
        target.parent.mkdir(parents=True, exist_ok=True)
        try:
            return str(write_verify_inputs(found, target, generated=True))
        except RecordingError as exc:
            raise ArtifactError(f"{entry.rel}: the recorded inputs cannot be used: {exc}") from None

    return lookup


# The artifact wing registers its own commands; the CLI is the only place that knows both wings
# (and hands the artifact wing what it needs of a recording).
register_artifact_commands(app, recorded_inputs=_recorded_artifact_inputs)
register_record_command(app)


def main() -> None:
    try:
        app()
    except KeyboardInterrupt:
        typer.echo("interrupted", err=True)
        raise SystemExit(130)
    except Exception as exc:  # a bug of ours: one line and exit 2 (TS2EXPORT_DEBUG=1: the traceback)
        if os.environ.get("TS2EXPORT_DEBUG"):
            raise
        typer.echo(f"error: internal error ({type(exc).__name__}: {str(exc)[:300]}); please report it "
                   "(TS2EXPORT_DEBUG=1 shows where)", err=True)
        raise SystemExit(2)
