"""The `record` command: run a program with its TorchScript entry points recorded.

`register(app)` adds it to the ts2export typer app. The work is in ts2export.record_run (running,
merging) and ts2export.record_hooks (what runs inside the program); the recording is read back with
ts2export.recording.
"""

from __future__ import annotations

from pathlib import Path
from typing import List, Optional

import typer

EXIT_ERROR = 2


def record_cmd(
    command: Optional[List[str]] = typer.Argument(None, metavar="-- CMD [ARGS]...", help="The command to run, after `--`.", show_default=False),
    output: Path = typer.Option(Path("ts2export-recording.json"), "--output", "-o", help="Where to write the recording (samples go next to it, NAME.samples.zip)."),
    samples: int = typer.Option(3, "--samples", help="Real input samples kept per call site and method (0: none)."),
    sample_bytes: int = typer.Option(64 << 20, "--sample-bytes", help="Most bytes of sample tensors kept in all (default 64 MiB)."),
    quiet: bool = typer.Option(False, "--quiet", "-q", help="No summary line on stderr."),
) -> None:
    """Run CMD with the TorchScript entry points recorded (script, trace, trace_module, load and the
    calls of what they return): per call site and artifact, the structure, dtypes and shapes of every
    call's inputs, which dims varied, and a few real input samples. CMD's output and exit code are
    unchanged: `ts2export record` exits with CMD's code (128+N when a signal N ended it), or 2 when
    CMD cannot be started or the recording cannot be written."""
    from ts2export.record_run import RecordError, record

    try:
        result = record(list(command or []), output, samples, sample_bytes)
    except RecordError as exc:
        typer.echo(f"error: {exc}", err=True)
        raise typer.Exit(EXIT_ERROR) from None
    if not quiet:
        if result.sites:
            where = f"{result.sites} call site{'s' if result.sites != 1 else ''}, {result.calls} call{'s' if result.calls != 1 else ''}"
        else:
            where = "no TorchScript entry point was called"
        side = f", samples in {result.samples}" if result.samples else ""
        typer.echo(f"ts2export record: wrote {result.output} ({where}; {result.processes} process{'es' if result.processes != 1 else ''}{side})", err=True)
    raise typer.Exit(result.exit_code)


def register(app: typer.Typer) -> None:
    """Add `record` to `app`."""
    app.command(
        "record",
        context_settings={"allow_extra_args": False, "ignore_unknown_options": True},
    )(record_cmd)
