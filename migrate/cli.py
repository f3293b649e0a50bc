"""The ``ts2export`` command line. The only place that knows both wings (source and artifact)."""

from __future__ import annotations

import os
import sys
from enum import Enum
from pathlib import Path
from typing import List, Optional

import typer

from ts2export import __version__
from ts2export.artifact_cli import register as register_artifact_commands

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
ConfigOpt = typer.Option(None, "--config", help="pyproject.toml to read [tool.ts2export] from (default: the nearest one).")
JobsOpt = typer.Option(0, "--jobs", "-j", help="Parallel worker processes (default: all cores).")
FormatOpt = typer.Option(Format.text, "--format", help="Report format.")
OutputOpt = typer.Option(None, "--output", "-o", help="Write the report to this file instead of standard output.")
ProgressOpt = typer.Option(True, "--progress/--no-progress", help="Progress bar on long runs (terminal only).")
UnsafeOpt = typer.Option(False, "--unsafe-fixes", help="Also apply fixes that may change behaviour (see `ts2export explain`).")


def fail(message: str, code: int = EXIT_ERROR) -> "typer.Exit":
    typer.echo(f"error: {message}", err=True)
    return typer.Exit(code)


def _split(values: Optional[List[str]]) -> list[str]:
    out: list[str] = []
    for v in values or []:
        out.extend(s.strip() for s in v.split(",") if s.strip())
    return out


def _run_engine(paths, select, ignore, config, jobs, fix, progress):
    """Discover, configure and run the engine; user errors exit 2 with one line."""
    from ts2export.config import ConfigError, load_config
    from ts2export.discovery import DiscoveryError, discover
    from ts2export.engine import Options, Task
    from ts2export.registry import known_selector

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
    tasks = [Task(str(f.path), f.kind, _per_file_ignores(f.path, cfg)) for f in files]
    options = Options(
        select=tuple(select_ids),
        ignore=tuple(ignore_ids),
        fix=fix,
        rule_options={"inputs": dict(cfg.inputs), "root": str(cfg.root)},
    )
    from ts2export.skipped import ENGINE_KINDS, result_for, set_aside_large

    max_bytes = int(cfg.max_file_size * 1_000_000)
    tasks = set_aside_large(tasks, max_bytes)
    results = _with_progress([t for t in tasks if t.kind in ENGINE_KINDS], options, jobs, progress)
    # Notebooks, broken links, files over max-file-size: one line each where TorchScript may be.
    others = [result_for(t, options, max_bytes) for t in tasks if t.kind not in ENGINE_KINDS]
    return sorted(results + others, key=lambda r: r.path) if others else results


def _per_file_ignores(path: Path, cfg) -> tuple[str, ...]:
    if not cfg.per_file_ignores:
        return ()
    import pathspec

    try:
        rel = Path(os.path.realpath(path)).relative_to(cfg.root).as_posix()
    except ValueError:
        rel = Path(path).as_posix()
    out: list[str] = []
    for pattern, ids in cfg.per_file_ignores.items():
        if pathspec.GitIgnoreSpec.from_lines([pattern]).match_file(rel):
            out.extend(ids)
    return tuple(out)


def _with_progress(tasks, options, jobs, progress):
    from ts2export.engine import run

    show = progress and len(tasks) >= 50 and sys.stderr.isatty() and not os.environ.get("CI")
    if not show:
        return run(tasks, options, jobs or None)
    from rich.progress import Progress

    with Progress(transient=True, console=_console(stderr=True)) as bar:
        task_id = bar.add_task("checking", total=len(tasks))
        return run(tasks, options, jobs or None, progress=lambda: bar.advance(task_id))


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


def _report(results, fmt: Format, output: Optional[Path], table: bool) -> None:
    from ts2export import output as out

    if fmt is Format.json:
        _emit(out.to_json(results), output)
    elif fmt is Format.sarif:
        _emit(out.to_sarif(results), output)
    elif fmt is Format.github:
        _emit(out.to_github(results), output)
    else:
        lines = [out.finding_line(f) for r in results for f in r.findings]
        text = "".join(line + "\n" for line in lines)
        if output is not None:
            _emit(text + out.summary_line(results) + "\n", output)
        else:
            _emit(text, None)
            if table and lines:
                _rule_table(results)
            if table:
                sys.stdout.write(out.facts_text(results))
            sys.stdout.write(out.summary_line(results) + "\n")
    _print_errors(results)


def _print_errors(results) -> None:
    from ts2export.output import error_line

    for r in results:
        if r.error:
            typer.echo(error_line(r), err=True)
        for note in r.notes:
            typer.echo(f"warning: {note}", err=True)


def _rule_table(results) -> None:
    from collections import Counter

    from rich.table import Table

    from ts2export.registry import rule_by_id

    counts = Counter(f.rule_id for r in results for f in r.findings)
    fixable = Counter(f.rule_id for r in results for f in r.findings if f.fixable)
    table = Table(title="Findings by rule", title_justify="left")
    for col, justify in (("rule", "left"), ("count", "right"), ("fixable", "right"), ("summary", "left")):
        table.add_column(col, justify=justify)
    for rule_id, n in sorted(counts.items()):
        rule = rule_by_id(rule_id)
        table.add_row(rule_id, str(n), str(fixable[rule_id]), rule.summary if rule else "")
    _console().print(table)


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
) -> None:
    """List every TorchScript construct, with a per-rule summary. Writes nothing.

    Exit 0 (findings are not a failure here; use `check` to gate), 2 on errors."""
    results = _run_engine(paths, select, ignore, config, jobs, None, progress)
    _report(results, format, output, table=True)
    raise typer.Exit(_exit_code(results, pending=False))


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
) -> None:
    """The CI gate: exit 0 when no TorchScript construct remains (suppressed ones aside),
    1 when some remain, 2 on usage, config or I/O errors and files that cannot be parsed."""
    results = _run_engine(paths, select, ignore, config, jobs, None, progress)
    _report(results, format, output, table=False)
    raise typer.Exit(_exit_code(results, pending=any(r.findings for r in results)))


@app.command()
def diff(
    paths: Optional[List[str]] = PathsArg,
    unsafe_fixes: bool = UnsafeOpt,
    select: Optional[List[str]] = SelectOpt,
    ignore: Optional[List[str]] = IgnoreOpt,
    config: Optional[Path] = ConfigOpt,
    jobs: int = JobsOpt,
    progress: bool = ProgressOpt,
) -> None:
    """Show the unified diff that `apply` would write (git apply-able when piped). Writes nothing.

    Exit 0 when nothing would change, 1 when something would, 2 on errors."""
    from ts2export.output import unified_diff

    results = _run_engine(paths, select, ignore, config, jobs, "unsafe" if unsafe_fixes else "safe", progress)
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
) -> None:
    """Write the fixes (safe ones; with --unsafe-fixes also unsafe ones) and list what is left.

    Exit 0 when nothing is left, 1 when findings remain for a person, 2 on errors."""
    from ts2export.output import finding_line, summary_line
    from ts2export.textio import NotRewritten, atomic_write_bytes

    results = _run_engine(paths, select, ignore, config, jobs, "unsafe" if unsafe_fixes else "safe", progress)
    written = 0
    for r in results:
        if r.changed:
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
    raise typer.Exit(_exit_code(results, pending=bool(left)))


@app.command("rules")
def list_rules(format: Format = typer.Option(Format.text, "--format", help="text or json.")) -> None:
    """List the rules: id, name, fix applicability and summary."""
    from ts2export.registry import all_rules

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
    from ts2export.docs import rule_markdown
    from ts2export.registry import rule_by_id

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


# The artifact wing registers its own commands; the CLI is the only place that knows both wings.
register_artifact_commands(app)


def main() -> None:
    try:
        app()
    except KeyboardInterrupt:
        typer.echo("interrupted", err=True)
        raise SystemExit(130)
