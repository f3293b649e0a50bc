"""`migrate-artifact STORE`: every artifact of a model store through the single-file pipeline.

Per artifact: its sha256 and the hash of the options that shape its outputs (its inputs included,
by content) form its key in the run state (`state`); an artifact already done with that key is not
run again. The rest go to an executor (`executors`: local worker processes or Ray), each finished
one is appended to the run state at once, and the report (`storereport`) is written at the end,
also after a Ctrl-C (with what was done; run again to do the rest).
"""

from __future__ import annotations

import dataclasses
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

from ts2export.artifact import storereport
from ts2export.artifact.errors import ArtifactError
from ts2export.artifact.state import RunState, options_hash, state_key
from ts2export.artifact.store import Entry, Store, corruption, file_sha256, in_shard

LOG_DIR = ".ts2export-logs"


@dataclasses.dataclass
class RunSettings:
    jobs: int = 1
    timeout: float = 600.0
    max_memory: int | None = None  # bytes
    executor: str = "local"
    ray_address: str | None = None
    ray_retries: int = 3
    shard: tuple[int, int] | None = None
    retry_failed: bool = False
    progress: bool = False


@dataclasses.dataclass
class StoreResult:
    report: dict[str, Any]
    selected: int
    reused: int
    ran: int
    interrupted: bool = False

    @property
    def exit_code(self) -> int:
        if self.interrupted:
            return 130
        return 0 if set(self.report["totals"]) <= {"migrated"} and not self.report["pending"] else 1


def _entry_options(entry: Entry, options: dict[str, Any]) -> dict[str, Any]:
    """The options that shape this artifact's outputs: the run's, the manifest entry's, its inputs."""
    opts = {**options, **{k: v for k, v in entry.options.items() if k in ("lower", "package")}}
    if entry.options.get("method"):
        opts["method"] = list(entry.options["method"])
    opts["input_specs"] = list(entry.specs)
    opts["inputs_sha256"] = file_sha256(Path(entry.inputs_file)) if entry.inputs_file else None
    return opts


def _base_record(entry: Entry) -> dict[str, Any]:
    return {"path": entry.rel, "sha256": entry.sha256, "inputs": entry.inputs_source, "output": entry.output}


def _executor(settings: RunSettings, out: Path, device: str) -> Any:
    from ts2export.artifact.executors import LocalExecutor, RayExecutor

    if settings.executor == "ray":
        return RayExecutor(settings.jobs or None, settings.timeout, settings.max_memory, settings.ray_address,
                           settings.ray_retries, device)
    return LocalExecutor(settings.jobs or 1, settings.timeout, settings.max_memory, out / LOG_DIR)


def migrate_store(store: Store, out: Path, options: dict[str, Any], settings: RunSettings,
                  echo: Callable[[str], None]) -> StoreResult:
    try:
        out.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise ArtifactError(f"cannot create {out}: {exc.strerror}") from None
    shard = f"{settings.shard[0]}/{settings.shard[1]}" if settings.shard else None
    entries = [e for e in store.entries if in_shard(e.rel, settings.shard)]
    state = RunState(out)
    records: dict[str, dict[str, Any]] = {}
    todo: list[tuple[str, dict[str, Any]]] = []
    by_key: dict[str, Entry] = {}
    reused_records: list[dict[str, Any]] = []
    for e in entries:
        e.sha256 = file_sha256(e.path)
        bad = corruption(e.path)
        if bad is not None:
            records[e.rel] = {**_base_record(e), "status": "corrupt", "failure_class": bad[0],
                              "error": bad[1].replace(str(e.path), e.rel), "timings": {}, "sizes": {"old": e.path.stat().st_size},
                              "max_abs_error": None, "steps": []}
            continue
        if e.inputs_source is None:
            records[e.rel] = {**_base_record(e), "status": "no-inputs", "failure_class": None,
                              "error": "no inputs: no manifest entry, sidecar file, recording or --input gives them",
                              "timings": {}, "sizes": {"old": e.path.stat().st_size}, "max_abs_error": None, "steps": []}
            continue
        opts = _entry_options(e, options)
        key = state_key(e.rel, e.sha256, options_hash(opts))
        done = state.get(key)
        if done is not None and not (settings.retry_failed and done["status"] != "migrated"):
            records[e.rel] = done
            reused_records.append(done)
            continue
        by_key[key] = e
        task_opts = {k: v for k, v in opts.items() if k not in ("input_specs", "inputs_sha256")}
        todo.append((key, {"path": str(e.path), "out_dir": str(out / e.output), "specs": e.specs,
                           "inputs_file": e.inputs_file, "options": task_opts}))
    reused = len(entries) - len(todo)
    noin = sum(1 for r in records.values() if r["status"] == "no-inputs")
    unreadable = sum(1 for r in records.values() if r["status"] == "corrupt") - sum(1 for r in reused_records if r["status"] == "corrupt")
    where = f" (shard {shard} of {len(store.entries)})" if shard else ""
    echo(f"{len(entries)} artifacts{where}: {reused - noin - unreadable} already done, {noin} without inputs, "
         f"{unreadable} unreadable, {len(todo)} to migrate")

    def on_done(key: str, record: dict[str, Any]) -> None:
        e = by_key[key]
        full = {**_base_record(e), **record}
        if full.get("error"):
            full["error"] = full["error"].replace(str(e.path), e.rel)
        state.add(key, full)
        records[e.rel] = full
        if advance is not None:
            advance()

    interrupted = False
    advance = None
    if todo:
        executor = _executor(settings, out, options.get("device", "auto"))
        with _Progress(settings.progress, len(todo)) as advance:
            try:
                executor.run(todo, on_done)
            except KeyboardInterrupt:
                interrupted = True
    if interrupted:
        # An artifact whose line reached the state file just as the Ctrl-C came (before `records`
        # or the state's own memory took it) is done: read back what the file holds.
        written = RunState(out)
        for key, e in by_key.items():
            if e.rel not in records and written.get(key) is not None:
                records[e.rel] = written.get(key)
    pending = len(entries) - len(records)
    report = storereport.build(list(records.values()), store.source, options, options_hash(options), shard, pending)
    storereport.write(out, report)
    return StoreResult(report, len(entries), reused, len(todo) - pending, interrupted)


class _Progress:
    """A rich progress bar with ETA on stderr when it is a terminal; else nothing."""

    def __init__(self, show: bool, total: int) -> None:
        self.show = show and sys.stderr.isatty()
        self.total = total
        self.bar: Any = None

    def __enter__(self) -> Callable[[], None] | None:
        if not self.show:
            return None
        from rich.console import Console
        from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeRemainingColumn

        self.bar = Progress(TextColumn("migrating"), BarColumn(), MofNCompleteColumn(), TimeRemainingColumn(),
                            console=Console(stderr=True), transient=True)
        self.bar.start()
        task = self.bar.add_task("artifacts", total=self.total)
        return lambda: self.bar.advance(task)

    def __exit__(self, *exc: Any) -> None:
        if self.bar is not None:
            self.bar.stop()
