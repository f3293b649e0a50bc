"""Which fixes of one `apply` round wait for the next: each fix is checked only against the fixes
whose spans overlap theirs (``_overlap_groups``), and that picks what comparing every pair picked."""

from __future__ import annotations

import random

from ts2export.engine.fixes import _first_come, _overlap_groups, _overlaps


def _span(rng: random.Random) -> tuple:
    line = rng.randint(1, 40)
    start = (line, rng.randint(0, 6))
    if rng.random() < 0.1:
        return (start, start)  # empty
    end_line = line + (rng.randint(0, 3) if rng.random() < 0.3 else 0)
    end = (end_line, rng.randint(start[1] + 1, 12) if end_line == line else rng.randint(0, 12))
    return (start, end)


def _every_pair(spans_of):
    accepted: list[int] = []
    for i, spans in enumerate(spans_of):
        if any(_overlaps(s, t) for j in accepted for s in spans for t in spans_of[j]):
            continue
        accepted.append(i)
    return accepted


def test_overlapping_fixes_share_a_group_and_the_same_fixes_are_picked():
    rng = random.Random(13)
    for _ in range(3000):
        spans_of = [[_span(rng) for _ in range(rng.choice((1, 1, 1, 2, 3)))] for _ in range(rng.randint(0, 14))]
        group = _overlap_groups(spans_of)
        for i in range(len(spans_of)):
            for j in range(i):
                if any(_overlaps(s, t) for s in spans_of[i] for t in spans_of[j]):
                    assert group[i] == group[j], (spans_of, i, j)
        assert _first_come(spans_of) == _every_pair(spans_of), spans_of


def test_fixes_far_apart_are_groups_of_their_own():
    spans_of = [[((i, 4), (i, 30))] for i in range(1, 1001)]
    assert len(set(_overlap_groups(spans_of))) == 1000
