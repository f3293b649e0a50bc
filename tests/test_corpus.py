"""The corpus harness: each case's migration equals its golden, is idempotent, leaves exactly the
findings the case names, and (for runnable cases) computes what the original computed."""

import functools

import pytest

from ts2export.harness.corpus import all_cases, compare_outputs, migrate_tree, run_program, source_files

CASES = all_cases()


def test_the_corpus_is_found():
    assert len(CASES) >= 40, "the corpus harness found no cases (where is corpus/?)"


@functools.lru_cache(maxsize=None)
def _migration(case_name):
    case = next(c for c in CASES if c.name == case_name)
    return case, migrate_tree(case)


@pytest.mark.parametrize("name", [c.name for c in CASES])
def test_migration_matches_golden(name):
    case, mig = _migration(name)
    assert not mig.errors, mig.errors
    golden = {p.relative_to(case.after).as_posix(): p.read_bytes() for p in source_files(case.after)}
    assert sorted(golden) == sorted(mig.files), "after/ must hold the same files as before/"
    for rel, data in mig.files.items():
        assert data.decode() == golden[rel].decode(), f"{name}/{rel} differs from its golden"
    assert not mig.second_pass_changes, f"a second apply changed {mig.second_pass_changes}"
    assert set(mig.remaining) == set(case.remaining), f"left after apply: {dict(mig.remaining)}"
    assert sorted(mig.held) == sorted(case.held), f"held back: {mig.held}"


@pytest.mark.slow
@pytest.mark.parametrize("name", [c.name for c in CASES if c.run])
def test_migrated_program_computes_the_same(name):
    case, mig = _migration(name)
    expected, _ = run_program(case.before, case.entry, case.timeout)
    actual, _ = run_program(case.before, case.entry, case.timeout, extra_files=mig.files)
    compare_outputs(expected, actual, case)
