"""``apply --test CMD``: apply unit by unit, and keep only what the program's own tests accept.

Static analysis cannot prove that an unsafe rewrite keeps a large model correct; the program's test
suite can. The migration is split into its units (the program model's units; the fixes outside
every unit, file by file), and the command is run:

1. on the untouched tree: the baseline. A test that already fails there does not count against a
   unit (failures are told apart by the ``FAILED``/``ERROR`` lines pytest prints);
2. with every unit applied: when it passes, that is all (two runs in all);
3. otherwise the units are bisected: a half is applied on top of what is kept so far, kept when the
   command passes, split again when it fails, down to single units, which are rolled back and named
   with the tests that failed. A few runs for each unit that breaks something, not one per unit.

Every state written is a whole migration of a set of units (the engine re-decides what to hold back
for it), and each file is replaced atomically. On an interrupt the tree is put back to the last
state the command accepted (the untouched tree at first), so it is never left half-written.
"""

from __future__ import annotations

import re
import signal
import subprocess
import time
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Callable, Sequence

from ts2export.engine.analysis import Analysis, analyze
from ts2export.engine.tasks import FileResult, Options, Task, unit_label
from ts2export.textio import atomic_write_bytes

_FAILED = re.compile(r"^(?:FAILED|ERROR)\s+(\S+)", re.MULTILINE)


class GatedError(Exception):
    """The test command cannot gate the migration (it fails on the untouched tree in a way that
    cannot be told apart from new failures, or it does not run): one line, exit 2."""


@dataclass
class TestRun:
    code: int
    failed: frozenset[str]
    output: str
    seconds: float

    @property
    def summary(self) -> str:
        if self.failed:
            shown = sorted(self.failed)
            return ", ".join(shown[:5]) + (f" and {len(shown) - 5} more" if len(shown) > 5 else "")
        tail = [line for line in self.output.strip().splitlines() if line.strip()][-1:] or [""]
        return f"exit {self.code}: {tail[0][:200]}"


#: How a test command runs: (command, cwd, timeout) -> (exit code, output); raises
#: subprocess.TimeoutExpired. The default is the shell.
Launcher = Callable[[str, Path, "float | None"], "tuple[int, str]"]


def shell(command: str, cwd: Path, timeout: float | None) -> tuple[int, str]:
    proc = subprocess.run(command, shell=True, cwd=cwd, capture_output=True, text=True, timeout=timeout)
    return proc.returncode, proc.stdout + proc.stderr


def run_command(command: str, cwd: Path, timeout: float | None, launch: Launcher = shell) -> TestRun:
    start = time.perf_counter()
    try:
        code, output = launch(command, cwd, timeout)
    except subprocess.TimeoutExpired as exc:
        out = (exc.stdout or b"").decode(errors="replace") if isinstance(exc.stdout, bytes) else (exc.stdout or "")
        return TestRun(124, frozenset(), out + f"\n(timed out after {timeout:.0f} s)", time.perf_counter() - start)
    return TestRun(code, frozenset(_FAILED.findall(output)), output, time.perf_counter() - start)


def accepted(run: TestRun, baseline: TestRun) -> bool:
    """Whether a run shows no failure that the baseline did not have."""
    if run.code == 0:
        return True
    if baseline.code == 0:
        return False
    return bool(run.failed) and run.failed <= baseline.failed


@dataclass
class Outcome:
    results: list[FileResult]  # the findings of the state written last (the accepted one)
    kept: list[str] = field(default_factory=list)
    rolled_back: dict[str, str] = field(default_factory=dict)  # unit -> the tests that failed with it
    runs: int = 0  # command runs, the baseline included
    baseline: TestRun | None = None
    analysis_seconds: float = 0.0  # checking, deciding and fixing (every state), for the benchmark
    test_seconds: float = 0.0  # the command's runs


def gated_apply(tasks: Sequence[Task], options: Options, command: str, cwd: Path, jobs: int | None = None,
                timeout: float | None = None, echo: Callable[[str], None] = lambda line: None,
                reuse: bool = True, launch: Launcher = shell) -> Outcome:
    """Apply ``options``'s fixes to ``tasks`` unit by unit, keeping what ``command`` accepts
    (``launch``: how the command runs; the shell by default).

    The tree is checked and modelled once (:class:`Analysis`); each state re-decides and re-fixes
    only the files whose decision changed. ``reuse=False`` analyses every state from scratch (the
    baseline of ``scripts/bench_gated.py``)."""
    originals: dict[str, bytes] = {}
    for t in tasks:
        try:
            originals[t.path] = Path(t.path).read_bytes()
        except OSError:
            continue
    in_memory = [replace(t, data=originals[t.path]) if t.path in originals else t for t in tasks]
    on_disk = dict(originals)  # what each file holds now
    good = dict(originals)  # the last state the command accepted

    def write(state: dict[str, bytes]) -> None:
        for path, data in state.items():
            if on_disk.get(path) != data:
                atomic_write_bytes(Path(path), data)
                on_disk[path] = data

    analysis: Analysis | None = None

    def migrate(excluded: Sequence[str]) -> tuple[dict[str, bytes], list[FileResult]]:
        nonlocal analysis
        start = time.perf_counter()
        if not reuse:
            results = analyze(in_memory, replace(options, exclude_units=tuple(excluded)), jobs).results
        else:
            if analysis is None:
                analysis = Analysis(in_memory, options, jobs)
            results = analysis.run(tuple(excluded)).results
        outcome.analysis_seconds += time.perf_counter() - start
        state = dict(originals)
        for r in results:
            if r.changed and r.path in state:
                state[r.path] = r.new
        return state, results

    outcome = Outcome(results=[])
    try:
        echo(f"Running `{command}` on the untouched tree (the baseline)...")
        baseline = run_command(command, cwd, timeout, launch)
        outcome.baseline, outcome.runs, outcome.test_seconds = baseline, 1, baseline.seconds
        if baseline.code != 0 and not baseline.failed:
            raise GatedError(f"`{command}` fails on the untouched tree ({baseline.summary}) and its failures cannot be "
                             "told apart from new ones; fix it first, or give a pytest command")
        if baseline.code != 0:
            echo(f"  {len(baseline.failed)} test(s) already fail; they do not count against any unit")
        state, results = migrate(())
        outcome.results = results
        units = sorted({unit_label(r.path, f.unit) for r in results for f in r.fixed})
        if not units:
            return outcome
        kept: list[str] = []
        last_failure = [""]  # what the last failing run said (for a unit known to fail without a run)

        def trial(candidates: list[str]) -> bool:
            nonlocal good
            wanted = set(kept) | set(candidates)
            state, results = migrate([u for u in units if u not in wanted])
            write(state)
            run = run_command(command, cwd, timeout, launch)
            outcome.runs += 1
            outcome.test_seconds += run.seconds
            ok = accepted(run, baseline)
            echo(f"  {'kept' if ok else 'failed'}: {len(candidates)} unit(s) on top of {len(kept)} "
                 f"({run.seconds:.1f} s)" + ("" if ok else f": {run.summary}"))
            if not ok:
                last_failure[0] = run.summary
            if ok:
                good = state
                kept.extend(candidates)
            elif len(candidates) == 1:
                outcome.rolled_back[candidates[0]] = run.summary
            return ok

        def bisect(candidates: list[str], failing: bool = False) -> bool:
            """Keep what passes of ``candidates``; True when all of them were kept. ``failing``:
            this very set (on top of what is kept) is known to fail, so it is not run again."""
            if not candidates:
                return True
            if not failing and trial(candidates):
                return True
            if len(candidates) == 1:
                if failing:
                    outcome.rolled_back[candidates[0]] = last_failure[0]
                return False
            half = len(candidates) // 2
            # When the first half passes whole, the second half on top of it is the set that failed.
            bisect(candidates[half:], failing=bisect(candidates[:half]))
            return False

        echo(f"Applying {len(units)} unit(s) and running `{command}` after each batch...")
        bisect(units)
        outcome.kept = kept
        final, outcome.results = migrate([u for u in units if u not in kept])  # findings say what was rolled back
        good = final
        write(good)
        return outcome
    except BaseException:
        # An interrupt (or anything else): put back the last state the command accepted, whole.
        previous = signal.signal(signal.SIGINT, signal.SIG_IGN)
        try:
            write(good)
        finally:
            signal.signal(signal.SIGINT, previous)
        raise
    finally:
        if analysis is not None:
            analysis.close()
