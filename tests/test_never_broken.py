"""The first rule: a migration never breaks a program.

Every runnable corpus program, and variants generated from it the way outside code is written
(tests/variants.py: artifact paths built at run time in mixed spellings, batch-1 trace examples,
trace examples hidden behind a helper's parameter), is run before ``apply``, after ``apply`` and
after ``apply --unsafe-fixes``, and after ``ts2export record`` and ``apply --unsafe-fixes
--recording``, and (for the programs of issue 32's classes) gated: ``apply --unsafe-fixes
--recording --test`` with the program itself, compared, as the test command; every run must
succeed with the same outputs. A program may end up
less migrated, never broken. (The case's own fix mode on the program itself is run by
tests/test_corpus.py.)"""

from __future__ import annotations

import pytest

from tests.variants import VARIANTS, variant
from ts2export.harness.corpus import (
    all_cases, case_options, compare_outputs, record_program, run_program, run_tree, source_files,
)

CASES = [c for c in all_cases() if c.run]


def _files(case) -> dict[str, bytes]:
    return {p.relative_to(case.before).as_posix(): p.read_bytes() for p in source_files(case.before)}


def _apply(case, files: dict[str, bytes], mode: str, recording=None, results=None) -> dict[str, bytes]:
    """The tree as apply writes it (``results``: the engine's, where the caller has them)."""
    results = {r.path: r for r in (results or run_tree(files, case_options(case, mode, recording)))}
    out = dict(files)
    for rel, r in results.items():
        assert r.error is None, f"{rel}: {r.error}"
        if r.changed:
            out[rel] = r.new
    return out


def _check(case, files: dict[str, bytes], modes: tuple[str, ...], variant_of: str = "", recording=None,
           expected=None, recordings: tuple = ()) -> list[str]:
    """Run the program (unless its ``expected`` outputs are given) and its migrations; the modes
    whose migration changed something. ``recordings``: more modes, ``apply --unsafe-fixes`` with
    each recording (a migration already run is not run again)."""
    if expected is None:
        try:
            expected, _ = run_program(case.before, case.entry, case.timeout, extra_files=files)
        except RuntimeError as exc:
            if not variant_of:
                raise
            _not_a_program(variant_of, exc)
    seen: list[dict[str, bytes]] = []
    ran = []
    for mode, recorded in [*((m, recording) for m in modes), *(("unsafe", r) for r in recordings)]:
        migrated = _apply(case, files, mode, recorded)
        if migrated == files or migrated in seen:
            continue
        seen.append(migrated)
        _same_outputs(case, files, migrated, expected, mode)
        ran.append(mode)
    return ran


def _same_outputs(case, files: dict[str, bytes], migrated: dict[str, bytes], expected, mode: str) -> None:
    """The migrated program runs, with the outputs the program had."""
    try:
        actual, _ = run_program(case.before, case.entry, case.timeout, extra_files=migrated, probe_sizes=True)
    except RuntimeError as exc:
        changed = sorted(rel for rel in migrated if migrated[rel] != files[rel])
        raise AssertionError(f"apply ({mode}) broke the program (changed: {changed}):\n{exc}") from None
    compare_outputs(expected, actual, case)


def _not_a_program(variant_of: str, exc: Exception):
    # The variant itself is not a valid program (a batch-1 example under BatchNorm, say).
    pytest.skip(f"the {variant_of} variant does not run before migration: {str(exc).strip().splitlines()[-1]}")


@pytest.mark.slow
@pytest.mark.parametrize("name", [c.name for c in CASES])
def test_other_fix_mode_never_breaks(name):
    case = next(c for c in CASES if c.name == name)
    modes = ("safe",) if case.unsafe_fixes else ("unsafe",)
    if case.record or case.test:  # the case's own mode used a recording or a test command: also without
        modes = ("safe", "unsafe")
    _check(case, _files(case), modes)


@pytest.mark.slow
@pytest.mark.parametrize("name", [c.name for c in CASES])
def test_recorded_mode_never_breaks(name, tmp_path):
    """The third mode: `ts2export record` runs the program, then `apply --unsafe-fixes --recording`.
    Evidence must not cost fixes the static path makes safely: the recorded mode fixes at least
    as many findings as `apply --unsafe-fixes` without the recording (issue 27; the static
    migration runs with equal outputs in test_other_fix_mode_never_breaks and test_corpus)."""
    case = next(c for c in CASES if c.name == name)
    files = _files(case)
    recording = record_program(case, tmp_path)
    results = run_tree(files, case_options(case, "unsafe", recording))
    expected, _ = run_program(case.before, case.entry, case.timeout, extra_files=files)
    migrated = _apply(case, files, "unsafe", results=results)
    if migrated != files:
        _same_outputs(case, files, migrated, expected, "recorded")
    static = [f for r in run_tree(files, case_options(case, "unsafe")) for f in r.fixed]
    recorded = [f for r in results for f in r.fixed]
    lost = {(f.path, f.line, f.rule_id) for f in static} - {(f.path, f.line, f.rule_id) for f in recorded}
    assert len(recorded) >= len(static), f"the recording fixed {len(recorded)} where the static path fixed {len(static)}: lost {sorted(lost)}"


@pytest.mark.slow
@pytest.mark.parametrize("name,kind", [(c.name, v) for c in CASES for v in VARIANTS
                                       if variant(_files(c), v) is not None])
def test_variants_never_break(name, kind, tmp_path):
    """Each variant in the three modes: `apply`, `apply --unsafe-fixes`, and recorded."""
    import torch

    case = next(c for c in CASES if c.name == name)
    files = variant(_files(case), kind)
    try:  # the run that records gives the outputs before migration (the recorder changes none)
        recording = record_program(case, tmp_path, files)
    except RuntimeError as exc:
        _not_a_program(kind, exc)
    expected = torch.load(recording.parent / "outputs.pt", weights_only=False)
    _check(case, files, ("safe", "unsafe"), variant_of=kind, expected=expected, recordings=(recording,))


#: The classes of issue 32, each a program written the way outside code is: a frozen trace saved
#: and returned, parameters written in place by a fusing helper, a dynamically quantized
#: recurrent model, a trace whose inputs are items of a batch dict; and a sampler over a frozen trace.
GATED = ["never_broken/frozen_trace_saved", "never_broken/fused_detector", "never_broken/quantized_classifier",
         "never_broken/dict_batch_trace", "never_broken/frozen_sampler",
         # issue 27's proofs that failed where apply rewrites, and issue 28's framework shapes
         "recorded/proof_data_branch", "recorded/proof_named_outputs", "recorded/proof_scripted_child",
         "recorded/proof_trace_kwargs", "recorded/encoder_methods", "never_broken/checkpoint_rotation",
         "recorded/compile_mode_framework", "never_broken/text_pipeline", "never_broken/beam_search",
         "never_broken/detection_postprocess", "never_broken/packed_tagger", "recorded/registry_checks",
         "recorded/proof_eager_only_branch", "never_broken/loaded_ensemble",
         # issue 49's: what a kept script compiles, and calls meant to fail
         "never_broken/kept_script_guards", "never_broken/kept_script_classes", "never_broken/raises_not_example",
         "never_broken/constant_per_call", "never_broken/data_dependent_matcher", "never_broken/scripted_dataclass",
         "never_broken/dict_inputs", "never_broken/scripting_decides",
         "never_broken/batch_one_export"]


@pytest.mark.slow
@pytest.mark.parametrize("name", GATED)
def test_gated_mode_never_breaks(name, tmp_path, monkeypatch):
    """The fourth mode: `record`, then `apply --unsafe-fixes --recording --test CMD`, where the
    command runs the program and compares its outputs with the outputs it had before. The gate keeps
    what the command accepts; what it wrote must run with the same outputs, and the units the
    recorded mode migrates with equal outputs must not be rolled back."""
    from ts2export.engine.discovery import file_kind
    from ts2export.engine.gated import gated_apply
    from ts2export.engine.tasks import Task
    from pathlib import Path
    import shutil

    case = next(c for c in CASES if c.name == name)
    files = _files(case)
    expected, _ = run_program(case.before, case.entry, case.timeout)
    recording = record_program(case, tmp_path / "rec")
    options = case_options(case, "unsafe", recording)
    recorded = _apply(case, files, "unsafe", recording)

    def same_outputs(command, cwd, timeout):
        try:
            actual, _ = run_program(Path(cwd), case.entry, case.timeout, probe_sizes=True)
            compare_outputs(expected, actual, case)
        except (RuntimeError, AssertionError) as exc:
            return 1, str(exc)
        return 0, "outputs equal"

    work = tmp_path / "prog"
    shutil.copytree(case.before, work, ignore=shutil.ignore_patterns("__pycache__"))
    monkeypatch.chdir(work)  # paths as `ts2export apply --test` in the repository gives them
    tasks = [Task(rel, kind) for rel in sorted(files) if (kind := file_kind(Path(rel)))]
    outcome = gated_apply(tasks, options, "the program, compared", work, jobs=1, timeout=case.timeout,
                          launch=same_outputs)
    gated = {rel: (work / rel).read_bytes() for rel in files}
    actual, _ = run_program(case.before, case.entry, case.timeout, extra_files=gated, probe_sizes=True)
    compare_outputs(expected, actual, case)
    assert not outcome.rolled_back, outcome.rolled_back  # the recorded mode's units keep their equal outputs
    import difflib
    diff = [line for rel in files for line in difflib.unified_diff(
        recorded[rel].decode().splitlines(), gated[rel].decode().splitlines(), rel, rel + " (gated)", lineterm="")]
    assert not diff, "\n".join(diff)
