"""Artifact commands for the ts2export CLI: convert, verify, package, lower, migrate-artifact.

`register(app)` adds them to a typer app. Nothing heavy is imported here: torch and executorch are
imported inside the commands so that `ts2export --help` stays fast.

Exit codes: 0 pass, 1 verification mismatch, 2 error (one `error: ...` line on stderr).
"""

from __future__ import annotations

import contextlib
import json
import subprocess
import sys
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Optional

import typer

EXIT_OK, EXIT_MISMATCH, EXIT_ERROR = 0, 1, 2

InputOpt = typer.Option(
    None, "--input", "-i", help="Input spec, one per positional input: DTYPE[dims]{lo..hi}, e.g. 'float32[B=1..64,3,224,224]'; METHOD:SPEC for other methods."
)
InputsOpt = typer.Option(
    None, "--inputs", help="File holding what forward is called with, torch.save'd: a tensor, a tuple/list of arguments, or a dict (any nesting of tensors)."
)
DeviceOpt = typer.Option(
    "auto", "--device", help="auto (the device the artifact's graph or weights name, else as available), cpu, cuda[:N], xpu[:N], mps."
)
IsolateOpt = typer.Option(False, "--isolate", help="Load and run the TorchScript file in a subprocess (see the security note).")
TimeoutOpt = typer.Option(600.0, "--timeout", help="Seconds before an --isolate subprocess is killed.")
VerboseOpt = typer.Option(False, "--verbose", "-v", help="Show warnings and tracebacks.")


def _err(message: str) -> None:
    typer.echo(f"error: {message}", err=True)


@contextlib.contextmanager
def _quiet(verbose: bool) -> Iterator[None]:
    """Hide library warnings and log noise unless --verbose."""
    from ts2export.artifact import fsutil
    from ts2export.artifact.storetask import quiet

    if verbose:
        fsutil.QUIET_NATIVE_STDERR = False
        yield
        return
    with quiet():
        yield


def _guard(verbose: bool, body: Callable[[], int], json_errors: bool = False) -> None:
    """Run a command body: ArtifactError -> one line + exit 2; anything else -> one line + exit 2."""
    from ts2export.artifact.errors import ArtifactError, one_line

    try:
        with _quiet(verbose):
            code = body()
    except ArtifactError as exc:
        if json_errors:
            typer.echo(json.dumps({"status": "error", "error": str(exc)}))
        _err(str(exc))
        raise typer.Exit(EXIT_ERROR) from None
    except (typer.Exit, KeyboardInterrupt):
        raise
    except Exception as exc:  # an unexpected failure still gets one line; --verbose shows the traceback
        if verbose:
            raise
        if json_errors:
            typer.echo(json.dumps({"status": "error", "error": one_line(exc)}))
        _err(f"{type(exc).__name__}: {one_line(exc)} (rerun with --verbose for details)")
        raise typer.Exit(EXIT_ERROR) from None
    raise typer.Exit(code)


def _isolated(ctx: typer.Context, timeout: float) -> None:
    """Re-run the current command, minus --isolate/--timeout, in a fresh Python process."""
    argv = [ctx.info_name or ctx.command.name]
    for param in ctx.command.params:
        if param.name in ("isolate", "timeout"):
            continue
        value = ctx.params.get(param.name)
        if param.param_type_name == "argument":
            argv.append(str(value))
            continue
        if value is None or value == () or value == []:
            continue
        opt = param.opts[0]
        if getattr(param, "is_flag", False) and not getattr(param, "secondary_opts", None):
            if value:
                argv.append(opt)
        elif getattr(param, "secondary_opts", None):
            argv.append(opt if value else param.secondary_opts[0])
        elif getattr(param, "multiple", False):
            for v in value:
                argv += [opt, str(v)]
        else:
            argv += [opt, str(getattr(value, "value", value))]
    cmd = [sys.executable, "-m", "ts2export.artifact", *argv]
    try:
        proc = subprocess.run(cmd, timeout=timeout)
    except subprocess.TimeoutExpired:
        _err(f"isolated {argv[0]} timed out after {timeout:g} s and was killed")
        raise typer.Exit(EXIT_ERROR) from None
    if proc.returncode < 0:
        _err(f"isolated {argv[0]} was killed by signal {-proc.returncode}")
        raise typer.Exit(EXIT_ERROR)
    raise typer.Exit(proc.returncode if proc.returncode in (0, 1, 2) else EXIT_ERROR)


def convert_cmd(
    ctx: typer.Context,
    old: Path = typer.Argument(..., help="Saved TorchScript module (.pt)."),
    output: Optional[Path] = typer.Option(None, "--output", "-o", help="Where to write the .pt2."),
    input: Optional[list[str]] = InputOpt,
    inputs: Optional[Path] = InputsOpt,
    method: Optional[list[str]] = typer.Option(None, "--method", "-m", help="Method to convert (repeat); default forward."),
    list_methods: bool = typer.Option(False, "--list-methods", help="List the module's methods and exit."),
    seed: int = typer.Option(0, "--seed", help="Seed for the example inputs made from specs."),
    device: str = DeviceOpt,
    to_device: Optional[str] = typer.Option(None, "--to-device", help="Move the converted program to this device (move_to_device_pass) before saving."),
    isolate: bool = IsolateOpt,
    timeout: float = TimeoutOpt,
    verbose: bool = VerboseOpt,
) -> None:
    """Convert a saved TorchScript module into an ExportedProgram archive (.pt2), on the device it needs."""
    if isolate:
        _isolated(ctx, timeout)

    def body() -> int:
        from ts2export.artifact.errors import ArtifactError
        from ts2export.artifact.loading import load_torchscript, script_methods

        if list_methods:
            sm = load_torchscript(old, "cpu")
            for name in script_methods(sm):
                args = ", ".join(f"{a.name}: {a.type}" for a in list(getattr(sm, name).schema.arguments)[1:])
                typer.echo(f"{name}({args})")
            return EXIT_OK
        if output is None:
            raise ArtifactError("convert needs -o/--output NEW.pt2")
        from ts2export.artifact.convert import convert

        rep = convert(
            str(old), str(output), input or (), str(inputs) if inputs else None, method or (), seed, device, to_device
        )
        for n in rep.notes:
            typer.echo(f"note: {n}")
        for m in rep.methods:
            typer.echo(f"{m.method}: converted with {m.strategy} in {m.seconds:.1f} s; inputs {', '.join(m.inputs)}")
            if verbose:
                for n in m.notes:
                    typer.echo(f"  {n}")
        others = [n for n in rep.available if n not in {m.method for m in rep.methods}]
        if others:
            typer.echo(f"not converted (use --method): {', '.join(others)}")
        moved = f", moved to {rep.saved_on}" if rep.saved_on != rep.device else ""
        typer.echo(f"wrote {rep.output} (converted on {rep.device}{moved})")
        return EXIT_OK

    _guard(verbose, body)


def verify_cmd(
    ctx: typer.Context,
    old: Path = typer.Argument(..., help="Saved TorchScript module (.pt)."),
    new: Path = typer.Argument(..., help="Converted .pt2 or lowered .pte."),
    input: Optional[list[str]] = InputOpt,
    inputs: Optional[Path] = InputsOpt,
    device: str = DeviceOpt,
    samples: int = typer.Option(3, "--samples", help="Generated input sets (dims at min, max, middle, then random)."),
    rtol: Optional[float] = typer.Option(None, "--rtol", help="Relative tolerance (with --atol); default per dtype."),
    atol: Optional[float] = typer.Option(None, "--atol", help="Absolute tolerance (with --rtol)."),
    seed: int = typer.Option(0, "--seed"),
    format: str = typer.Option("text", "--format", help="text or json."),
    reference: Optional[str] = typer.Option(None, "--reference", help="module:callable (or file.py:callable) building the eager model."),
    method: Optional[list[str]] = typer.Option(None, "--method", "-m", help="Only these methods."),
    benchmark: bool = typer.Option(False, "--benchmark", help="Also time OLD and NEW on the device: median latency, peak device memory, ratio."),
    runs: int = typer.Option(20, "--runs", help="Timed runs per model for --benchmark (median reported)."),
    warmup: int = typer.Option(5, "--warmup", help="Untimed warm-up runs per model for --benchmark."),
    graph: bool = typer.Option(False, "--graph", help="Also capture NEW (.pt2) in a device graph and compare its replays with OLD (needs an accelerator)."),
    isolate: bool = IsolateOpt,
    timeout: float = TimeoutOpt,
    verbose: bool = VerboseOpt,
) -> None:
    """Run OLD and NEW (.pt2, AOTInductor package or .pte) on the same inputs and compare every output."""
    if format not in ("text", "json"):
        _err(f"--format must be text or json, not {format!r}")
        raise typer.Exit(EXIT_ERROR)
    if isolate:
        _isolated(ctx, timeout)

    def body() -> int:
        from ts2export.artifact.verify import verify

        rep = verify(
            str(old), str(new), input or (), str(inputs) if inputs else None, device, samples, rtol, atol, seed,
            reference, method or (), runs if benchmark else 0, warmup, graph,
        )
        typer.echo(rep.to_json() if format == "json" else rep.to_text())
        return EXIT_OK if rep.ok else EXIT_MISMATCH

    _guard(verbose, body, json_errors=format == "json")


def package_cmd(
    new: Path = typer.Argument(..., help="ExportedProgram archive (.pt2) written by convert."),
    output: Path = typer.Option(..., "--output", "-o", help="Where to write the AOTInductor package (*.pt2)."),
    device: str = typer.Option("auto", "--device", help="Device to compile for: auto (the accelerator, else cpu), cpu, cuda[:N], ..."),
    method: Optional[list[str]] = typer.Option(None, "--method", "-m", help="Only these programs (default: all)."),
    verify: bool = typer.Option(False, "--verify", help="Run the package on the stored and generated inputs and compare with the .pt2."),
    samples: int = typer.Option(3, "--samples"),
    seed: int = typer.Option(0, "--seed"),
    verbose: bool = VerboseOpt,
) -> None:
    """Compile a .pt2 into an AOTInductor package for C++ servers (torch::inductor::AOTIModelPackageLoader)."""

    def body() -> int:
        from ts2export.artifact.package import package
        from ts2export.artifact.verify import verify_package_against_program

        rep = package(str(new), str(output), device, method or ())
        typer.echo(rep.to_text())
        if verify:
            v = verify_package_against_program(str(new), str(output), samples, seed)
            typer.echo(v.to_text())
            return EXIT_OK if v.ok else EXIT_MISMATCH
        return EXIT_OK

    _guard(verbose, body)


def lower_cmd(
    new: Path = typer.Argument(..., help="ExportedProgram archive (.pt2)."),
    output: Path = typer.Option(..., "--output", "-o", help="Where to write the .pte."),
    backend: str = typer.Option("xnnpack", "--backend", help="xnnpack (portable kernels take the rest) or portable."),
    verify: bool = typer.Option(False, "--verify", help="Run the .pte on the stored and generated inputs and compare with the .pt2."),
    bundle: bool = typer.Option(False, "--bundle", help="Also write OUT.bpte, a BundledProgram with inputs and expected outputs."),
    samples: int = typer.Option(3, "--samples"),
    seed: int = typer.Option(0, "--seed"),
    verbose: bool = VerboseOpt,
) -> None:
    """Lower a .pt2 to an ExecuTorch program (.pte)."""

    def body() -> int:
        from ts2export.artifact.lower import lower
        from ts2export.artifact.verify import verify_pte_against_program

        rep = lower(str(new), str(output), backend, bundle, samples, seed)
        typer.echo(rep.to_text())
        if verify:
            v = verify_pte_against_program(str(new), str(output), samples, seed)
            typer.echo(v.to_text())
            return EXIT_OK if v.ok else EXIT_MISMATCH
        return EXIT_OK

    _guard(verbose, body)


def migrate_artifact_cmd(
    ctx: typer.Context,
    old: str = typer.Argument(..., help="Saved TorchScript module (.pt), or a model store: a directory, a glob ('models/**/*.pt') or a manifest (*.txt, *.jsonl)."),
    input: Optional[list[str]] = InputOpt,
    inputs: Optional[Path] = InputsOpt,
    out: Optional[Path] = typer.Option(None, "--out", help="Output directory (default ./<name>_export; required for a store)."),
    method: Optional[list[str]] = typer.Option(None, "--method", "-m"),
    backend: str = typer.Option("xnnpack", "--backend"),
    device: str = DeviceOpt,
    to_device: Optional[str] = typer.Option(None, "--to-device", help="Move the converted .pt2 to this device before saving."),
    samples: int = typer.Option(3, "--samples"),
    seed: int = typer.Option(0, "--seed"),
    reference: Optional[str] = typer.Option(None, "--reference"),
    rtol: Optional[float] = typer.Option(None, "--rtol"),
    atol: Optional[float] = typer.Option(None, "--atol"),
    lower: bool = typer.Option(True, "--lower/--no-lower", help="Lower to .pte and verify it (needs executorch); on by default."),
    package: bool = typer.Option(False, "--package/--no-package", help="Also build an AOTInductor package for the verify device and verify it."),
    isolate: bool = IsolateOpt,
    timeout: float = typer.Option(600.0, "--timeout", help="Seconds before an --isolate subprocess, or (store) one artifact's worker, is killed."),
    jobs: int = typer.Option(1, "--jobs", "-j", help="Store: artifacts migrated at once (worker processes; with Ray, tasks in flight)."),
    max_memory: Optional[str] = typer.Option(None, "--max-memory", help="Store: kill a worker whose resident memory passes this (e.g. 4G, 512M)."),
    executor: str = typer.Option("local", "--executor", help="Store: local (worker processes) or ray (one Ray task per artifact)."),
    ray_address: Optional[str] = typer.Option(None, "--ray-address", help="Store, --executor ray: the cluster (default $RAY_ADDRESS, else a local Ray)."),
    shard: Optional[str] = typer.Option(None, "--shard", help="Store: only shard K of N (K/N, 1-based; by sha256 of the relative path); join with merge-reports."),
    recording: Optional[Path] = typer.Option(None, "--recording", metavar="FILE", help="Store: inputs of artifacts a recorded program loaded (`ts2export record`)."),
    retry_failed: bool = typer.Option(False, "--retry-failed", help="Store: migrate again artifacts the run state holds as not migrated."),
    progress: bool = typer.Option(True, "--progress/--no-progress", help="Store: progress bar with ETA (terminal only)."),
    verbose: bool = VerboseOpt,
) -> None:
    """Migrate one TorchScript file, or every artifact of a model store (a directory, glob or manifest):
    convert -> verify, with --package an AOTInductor package -> verify, then lower to .pte -> verify (on
    by default; --no-lower skips it); report.md and report.json per artifact, and for a store, run in
    parallel and resumable, report.json and report.html over all."""
    from ts2export.artifact.store import is_store_argument

    if is_store_argument(old):
        _guard(verbose, lambda: _migrate_store(
            old, input or (), inputs, out, method or (), backend, device, to_device, samples, seed, reference, rtol, atol,
            lower, package, timeout, jobs, max_memory, executor, ray_address, shard, recording, retry_failed, progress,
        ))
        return
    store_only = {"--jobs": jobs != 1, "--max-memory": max_memory, "--executor": executor != "local", "--ray-address": ray_address,
                  "--shard": shard, "--recording": recording, "--retry-failed": retry_failed}
    given = [name for name, value in store_only.items() if value]
    if given:
        _err(f"{', '.join(given)}: for a model store (a directory, glob or manifest), not one file")
        raise typer.Exit(EXIT_ERROR)
    if isolate:
        _isolated(ctx, timeout)

    def body() -> int:
        from ts2export.artifact.pipeline import migrate_artifact

        rep = migrate_artifact(
            old, str(out) if out else None, input or (), str(inputs) if inputs else None, method or (),
            backend, device, samples, seed, reference, rtol, atol, lower, to_device, package,
        )
        for s in rep.steps:
            typer.echo(f"{s['step']}: {s['result']} ({s['seconds']:.1f} s) {s.get('detail', '')}".rstrip())
        typer.echo(f"report: {Path(rep.out_dir) / 'report.md'}")
        if rep.error:
            _err(rep.error)
        return rep.exit_code

    _guard(verbose, body)


def _parse_memory(text: str | None) -> int | None:
    from ts2export.artifact.errors import ArtifactError

    if not text:
        return None
    units = {"K": 2**10, "M": 2**20, "G": 2**30, "T": 2**40}
    t = text.strip().upper().removesuffix("IB").removesuffix("B")
    try:
        return int(float(t[:-1]) * units[t[-1]]) if t and t[-1] in units else int(t)
    except ValueError:
        raise ArtifactError(f"--max-memory {text!r}: expected a size such as 4G or 512M") from None


def _migrate_store(old, specs, inputs, out, methods, backend, device, to_device, samples, seed, reference, rtol, atol,
                   lower, package, timeout, jobs, max_memory, executor, ray_address, shard, recording, retry_failed,
                   progress) -> int:
    from ts2export.artifact.errors import ArtifactError
    from ts2export.artifact.store import discover, parse_shard, resolve_inputs
    from ts2export.artifact.storerun import RunSettings, migrate_store

    if out is None:
        raise ArtifactError("a model store needs --out DIR (its outputs mirror the store's layout there)")
    if executor not in ("local", "ray"):
        raise ArtifactError(f"--executor must be local or ray, not {executor!r}")
    if executor == "ray":
        try:
            import ray  # noqa: F401
        except ImportError:
            from ts2export.artifact.executors import RAY_MISSING

            raise ArtifactError(RAY_MISSING) from None
    if jobs < 1:
        raise ArtifactError("--jobs must be at least 1")
    if specs and inputs:
        raise ArtifactError("give --input or --inputs, not both")
    if inputs is not None and not inputs.is_file():
        raise ArtifactError(f"--inputs {inputs}: no such file")
    settings = RunSettings(jobs, timeout, _parse_memory(max_memory), executor, ray_address,
                           shard=parse_shard(shard) if shard else None, retry_failed=retry_failed, progress=progress)
    store = discover(old, exclude=out)
    recorded = None
    if recording is not None:
        if _RECORDED_INPUTS is None:
            raise ArtifactError("--recording needs the ts2export command (not python -m ts2export.artifact)")
        recorded = _RECORDED_INPUTS(recording, out)
    resolve_inputs(store, recorded, specs, str(inputs) if inputs else None)
    options = {"method": list(methods), "backend": backend, "device": device, "to_device": to_device, "samples": samples,
               "seed": seed, "reference": reference, "rtol": rtol, "atol": atol, "lower": lower, "package": package}
    result = migrate_store(store, out, options, settings, typer.echo)
    totals = ", ".join(f"{n} {s}" for s, n in result.report["totals"].items())
    typer.echo(f"{result.selected} artifacts: {totals}" + (f"; {result.report['pending']} not run yet" if result.report["pending"] else ""))
    typer.echo(f"report: {out / 'report.html'}")
    if result.interrupted:
        _err(f"interrupted: {result.report['pending']} artifact(s) left; run the same command again to migrate them")
    return result.exit_code


def merge_reports_cmd(
    reports: list[Path] = typer.Argument(..., help="Output folders of migrate-artifact runs (e.g. one per --shard)."),
    out: Path = typer.Option(..., "--out", "-o", help="Folder for the merged report.json and report.html."),
    verbose: bool = VerboseOpt,
) -> None:
    """Join the store reports of several migrate-artifact runs (shards) into one report."""

    def body() -> int:
        from ts2export.artifact.storereport import merge

        merged = merge(reports, out)
        totals = ", ".join(f"{n} {s}" for s, n in merged["totals"].items())
        typer.echo(f"{len(merged['artifacts'])} artifacts from {len(reports)} report(s): {totals}")
        typer.echo(f"report: {out / 'report.html'}")
        return EXIT_OK if set(merged["totals"]) <= {"migrated"} and not merged["pending"] else EXIT_MISMATCH

    _guard(verbose, body)


# Set by register(): turns (--recording FILE, --out DIR) into a lookup entry -> inputs file or None.
# The top CLI supplies it, since recordings belong to the record wing, which this wing never imports.
_RECORDED_INPUTS: Callable[[Path, Path], Callable[..., Optional[str]]] | None = None


def needs(module: str, extra: str) -> Callable:
    """A command that needs ``module`` (torch, executorch), which the core install leaves out: without
    it, one line says which extra to install, and the command exits 2."""
    import functools
    import importlib.util

    def wrap(command: Callable) -> Callable:
        @functools.wraps(command)
        def checked(*args, **kwargs):
            if importlib.util.find_spec(module) is None:
                typer.echo(f"error: `ts2export {command.__name__.removesuffix('_cmd').replace('_', '-')}` needs {module}, "
                           f"which this install does not have: pip install 'ts2export[{extra}]'", err=True)
                raise typer.Exit(EXIT_ERROR)
            return command(*args, **kwargs)

        return checked

    return wrap


def register(app: typer.Typer, recorded_inputs: Callable[[Path, Path], Callable[..., Optional[str]]] | None = None) -> None:
    """Add the artifact commands to `app`; `recorded_inputs(recording, out)` makes the lookup that
    `migrate-artifact STORE --recording FILE` uses (None: --recording is refused)."""
    global _RECORDED_INPUTS
    _RECORDED_INPUTS = recorded_inputs
    torch_needed = needs("torch", "torch")
    app.command("convert")(torch_needed(convert_cmd))
    app.command("verify")(torch_needed(verify_cmd))
    app.command("package")(torch_needed(package_cmd))
    app.command("lower")(torch_needed(lower_cmd))  # executorch: lower's own line names the [edge] extra
    app.command("migrate-artifact")(torch_needed(migrate_artifact_cmd))
    app.command("merge-reports")(merge_reports_cmd)


def make_app() -> typer.Typer:
    app = typer.Typer(add_completion=False, no_args_is_help=True, help="ts2export artifact commands")
    register(app)
    return app
