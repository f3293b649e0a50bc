"""Properties of the engine over generated programs (hypothesis + hypothesmith, TorchScript spliced in).

Bounded here (the "ci" profile: about a minute on 2 cores); `python scripts/fuzz.py --minutes N`
runs the same strategies for as long as asked and saves what fails under tests/fuzz_regressions/,
which tests/test_fuzz_regressions.py replays. See tests/fuzzing.py for the properties.
"""

from __future__ import annotations

import random
from collections import Counter
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from tests import fuzzing
from ts2export import engine
from ts2export.engine.discovery import file_kind
from ts2export.engine import Options, Task, process_bytes

settings.load_profile("ci")
CORPUS = Path(__file__).resolve().parent.parent / "corpus"


@settings(max_examples=5)
@given(fuzzing.plain_programs())
def test_files_without_torchscript_are_left_byte_identical(data):
    assert fuzzing.check_plain(data) == []


@settings(max_examples=5)
@given(fuzzing.samples(), st.sampled_from(fuzzing.FIX_MODES))
def test_hypothesmith_programs_with_torchscript_spliced_in(sample, fix):
    """Round trip of the untouched lines, validity, idempotence, one finding per place, determinism."""
    assert fuzzing.check(sample, fix) == []


@settings(max_examples=12)
@given(fuzzing.samples(grammar=False), st.sampled_from(("safe", "unsafe")))
def test_fragment_programs_with_torchscript_spliced_in(sample, fix):
    assert fuzzing.check(sample, fix) == []


def _outcome(results) -> list:
    return [(r.path, r.error, r.new, [(f.sort_key(), f.message) for f in r.findings],
             [(f.sort_key(), f.message) for f in r.fixed], r.notes) for r in results]


@settings(max_examples=2)
@given(st.lists(fuzzing.samples(grammar=False), min_size=5, max_size=7), st.randoms(use_true_random=False))
def test_results_do_not_depend_on_job_count_or_file_order(tmp_path_factory, samples, rnd):
    folder = tmp_path_factory.mktemp("jobs")
    tasks = []
    for i, sample in enumerate(samples):
        path = folder / f"m{i}.py"
        path.write_bytes(sample.data)
        tasks.append(Task(str(path), "python"))
    shuffled = list(tasks)
    rnd.shuffle(shuffled)
    for fix in ("unsafe",):  # fixing runs every file twice (facts first): the most to get wrong
        serial = engine.run(tasks, Options(fix=fix), jobs=1)
        parallel = engine.run(shuffled, Options(fix=fix), jobs=2)
        assert _outcome(serial) == _outcome(parallel)


def test_scan_output_does_not_depend_on_the_order_of_paths(tmp_path, run_cli):
    names = [f"m{i}.py" for i in range(6)]
    for i, name in enumerate(names):
        (tmp_path / name).write_text(f"import torch\nx = torch.jit.annotate(int, {i})\ntorch.jit.set_fusion_strategy([])\n")
    outputs = set()
    for order in (names, names[::-1], random.Random(0).sample(names, len(names))):
        for jobs in ("1", "2"):
            code, out, err = run_cli("scan", "--format", "json", "--jobs", jobs, *order, cwd=tmp_path)
            assert code == 0, err
            outputs.add(out)
    assert len(outputs) == 1


def _corpus_files():
    return sorted(p for p in CORPUS.rglob("*") if p.is_file() and file_kind(p) in ("python", "cpp"))


@pytest.mark.slow
@pytest.mark.parametrize("fix", [None])  # what scan reports; fixing modes are fuzzed
def test_one_finding_per_construct_over_the_corpus(fix):
    """No two findings share (rule, path, line, column): a construct is reported once (a call of a
    call, `torch.jit.optimize_for_inference(m)(x)`, used to be reported twice)."""
    twice = {}
    for path in _corpus_files():
        res = process_bytes(path.read_bytes(), Task(str(path.relative_to(CORPUS)), file_kind(path)), Options(fix=fix))
        counts = Counter((f.rule_id, f.path, f.line, f.column) for f in res.findings)
        twice.update({k: n for k, n in counts.items() if n > 1})
    assert twice == {}


@pytest.mark.parametrize(
    "code",
    [
        "import torch\ny = torch.jit.optimize_for_inference(m)(x)\n",
        "import torch\nz = torch.jit.freeze(m)(x)\n",
        "import torch\nr = torch.jit.trace(m, (x,))(x)\n",
        "import torch\nr = torch.jit.script(m)(x)\n",
    ],
)
def test_a_call_of_a_call_is_one_finding(code):
    res = process_bytes(code.encode(), Task("m.py", "python"), Options())
    assert len(res.findings) == 1, [f.message for f in res.findings]
