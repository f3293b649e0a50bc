"""The `record` command (run a program with its TorchScript entry points recorded) and
`recorded-inputs` (show a recording, or write one of its samples for `verify --inputs`).

`register(app)` adds it to the ts2export typer app. The work is in ts2export.record.run (running,
merging) and ts2export.record.hooks (what runs inside the program); the recording is read back with
ts2export.record.recording.
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
    prove: bool = typer.Option(True, "--prove/--no-prove", help="When each process ends, export what it scripted or traced with the recorded inputs, run it on the recorded samples and compare with TorchScript; `apply --recording` migrates what was proven and holds back what failed, with the error."),
    prove_timeout: float = typer.Option(120.0, "--prove-timeout", help="Seconds at most for the proof of one call site (then: not proven)."),
    quiet: bool = typer.Option(False, "--quiet", "-q", help="No summary line on stderr."),
) -> None:
    """Run CMD with the TorchScript entry points recorded (script, trace, trace_module, load and the
    calls of what they return): per call site and artifact, the structure, dtypes and shapes of every
    call's inputs, which dims varied, and a few real input samples. CMD's output and exit code are
    unchanged: `ts2export record` exits with CMD's code (128+N when a signal N ended it), or 2 when
    CMD cannot be started or the recording cannot be written. With --prove (the default), what CMD
    scripted or traced is exported and compared when CMD's processes end, after CMD's own work; the
    verdicts (proven, failed with the error and the line in your code, skipped) go in the recording."""
    from ts2export.record.run import RecordError, record

    try:
        result = record(list(command or []), output, samples, sample_bytes, prove, prove_timeout)
    except RecordError as exc:
        typer.echo(f"error: {exc}", err=True)
        raise typer.Exit(EXIT_ERROR) from None
    if not quiet:
        if result.sites:
            where = f"{result.sites} call site{'s' if result.sites != 1 else ''}, {result.calls} call{'s' if result.calls != 1 else ''}"
        else:
            where = "no TorchScript entry point was called"
        side = f", samples in {result.samples}" if result.samples else ""
        if result.proofs:
            side += "; " + ", ".join(f"{n} {verdict}" for verdict, n in sorted(result.proofs.items()))
        typer.echo(f"ts2export record: wrote {result.output} ({where}; {result.processes} process{'es' if result.processes != 1 else ''}{side})", err=True)
    raise typer.Exit(result.exit_code)


def recorded_inputs_cmd(
    recording: Path = typer.Argument(..., help="A recording written by `ts2export record`."),
    artifact: Optional[Path] = typer.Option(None, "--artifact", "-a", help="The inputs of a saved or loaded artifact (its path)."),
    at: Optional[str] = typer.Option(None, "--at", help="The inputs of the call site FILE:LINE (a script/trace/load call)."),
    method: str = typer.Option("forward", "--method", "-m", help="The method whose inputs to show or write."),
    output: Optional[Path] = typer.Option(None, "--output", "-o", help="Write a recorded sample here, for `verify --inputs`."),
    sample: int = typer.Option(0, "--sample", help="Which recorded sample to write (0 is the first)."),
) -> None:
    """Show what a recording holds: every call site and artifact, or for one of them (--at FILE:LINE,
    --artifact PATH) the example-input code and dynamic shapes built from the recorded calls. With
    -o, write a recorded input sample as a tuple of tensors for `ts2export verify --inputs`."""
    from ts2export.record.recording import RecordingError, load_recording, write_verify_inputs

    try:
        rec = load_recording(recording)
        if artifact is not None and at is not None:
            raise RecordingError("give --artifact or --at, not both")
        if artifact is None and at is None:
            if output is not None:
                raise RecordingError("-o needs --artifact PATH or --at FILE:LINE")
            _list(rec)
            return
        if artifact is not None:
            inputs, what = rec.inputs_for_artifact(artifact, root=Path.cwd(), method=method), str(artifact)
        else:
            file, _, line = (at or "").rpartition(":")
            if not file or not line.isdigit():
                raise RecordingError(f"--at takes FILE:LINE, not {at!r}")
            if len(rec.sites_at(file, int(line), root=Path.cwd())) > 1:
                raise RecordingError(f"{at}: several objects were made at this call; see `ts2export recorded-inputs {recording}`")
            inputs, what = rec.inputs_at(file, int(line), root=Path.cwd(), method=method), at
        if inputs is None:
            raise RecordingError(f"{recording}: no recorded calls of {method} for {what}")
        if output is not None:
            import importlib.util

            if importlib.util.find_spec("torch") is None:
                raise RecordingError("writing a sample needs torch, which this install does not have: "
                                     "pip install 'ts2export[torch]'")
            write_verify_inputs(inputs, output, sample)
            typer.echo(f"wrote {output} (sample {sample} of {len(inputs.samples)}: shapes {inputs.samples[sample]['shapes']})")
            return
        _show(inputs)
    except RecordingError as exc:
        typer.echo(f"error: {exc}", err=True)
        raise typer.Exit(EXIT_ERROR) from None


def _list(rec) -> None:
    for s in rec.sites:
        calls = ", ".join(f"{name}: {m['calls']} call{'s' if m['calls'] != 1 else ''}" for name, m in s["methods"].items())
        proof = s.get("proof")
        verdict = ""
        if proof:
            verdict = f"; proof: {proof['verdict']}"
            if proof["verdict"] != "proven" and proof.get("error"):
                frame = proof.get("frame")
                if frame and frame[0].startswith(str(rec.cwd) + "/"):
                    frame = [frame[0][len(str(rec.cwd)) + 1:], *frame[1:]]
                verdict += f" ({proof['error']}" + (f" at {frame[0]}:{frame[1]} in {frame[2]}" if frame else "") + ")"
        typer.echo(f"{s['path']}:{s['line']}:{s['col']}: {s['kind']} {s['target']} ({calls or 'never called'}{verdict})")
    for a in rec.artifacts:
        typer.echo(f"{a['path']}: saved by {', '.join(a['saved_by']) or '-'}, loaded by {', '.join(a['loaded_by']) or '-'}")
    if not rec.sites:
        typer.echo("no TorchScript entry point was called")


def _show(inputs) -> None:
    typer.echo(f"# {inputs.method}: {inputs.calls} recorded call{'s' if inputs.calls != 1 else ''}; sites {', '.join(inputs.sites)}")
    typer.echo(f"example_inputs = {inputs.args_code}" if inputs.args_code else "# example inputs: cannot be rebuilt as code")
    if inputs.kwargs_code:
        typer.echo(f"example_kwargs = {inputs.kwargs_code}")
    for line in inputs.dim_definitions():
        typer.echo(line)
    typer.echo(f"dynamic_shapes = {inputs.dynamic_shapes_code}")
    for note in inputs.notes:
        typer.echo(f"# note: {note}")
    typer.echo(f"# {len(inputs.samples)} recorded sample{'s' if len(inputs.samples) != 1 else ''}" + (f": {', '.join(str(s['shapes']) for s in inputs.samples)}" if inputs.samples else ""))


def register(app: typer.Typer) -> None:
    """Add `record` and `recorded-inputs` to `app`."""
    app.command(
        "record",
        context_settings={"allow_extra_args": False, "ignore_unknown_options": True},
    )(record_cmd)
    app.command("recorded-inputs")(recorded_inputs_cmd)
