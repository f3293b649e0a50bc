"""Replays every input saved under tests/fuzz_regressions/ (by scripts/fuzz.py when a property of
tests/fuzzing.py broke, or by hand for a bug found otherwise; "problems" says what it broke, empty
for a hand-written guard): each must keep every property now, in every fix mode."""

from __future__ import annotations

import pytest

from tests import fuzzing

CASES = sorted(fuzzing.REGRESSIONS.glob("*.json"))


def test_there_are_regression_cases():
    assert CASES, "tests/fuzz_regressions/ holds the inputs fuzzing found; it should not be empty"


@pytest.mark.parametrize("case", CASES, ids=[c.stem for c in CASES])
def test_fuzz_regression(case):
    sample, fix = fuzzing.Sample.from_json(case.read_text(encoding="utf-8"))
    for mode in dict.fromkeys((fix, *fuzzing.FIX_MODES)):
        assert fuzzing.check(sample, mode) == [], f"fix={mode}"
