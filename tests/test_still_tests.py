"""A rewrite never leaves a test that compares a thing with itself or loses its assertions
(ts2export.harness.still_tests): checked on the checker itself, on every rewritten test file of the
corpus goldens, and on a scriptability test of a module that cannot be exported."""

from __future__ import annotations

import textwrap

import pytest

from ts2export.engine.tasks import Options
from ts2export.harness.corpus import all_cases, run_tree, source_files
from ts2export.harness.still_tests import weakened

BEFORE = '''
import torch

def test_scripts():
    op = Net()
    op_jit = torch.jit.script(op)
    x = torch.ones(2, 3)
    torch.testing.assert_close(op(x), op_jit(x))
    assert op_jit(x).shape == op(x).shape
'''


def test_an_alias_of_the_module_makes_its_comparisons_vacuous():
    after = BEFORE.replace("torch.jit.script(op)", "op")
    problems = weakened(BEFORE, after)
    assert len(problems) == 2 and all("compares a thing with itself" in p for p in problems)
    assert any("torch.testing.assert_close(op(x), op_jit(x))" in p for p in problems)
    exported = BEFORE.replace("torch.jit.script(op)", "torch.export.export(op, (torch.ones(2, 3),)).module()")
    assert weakened(BEFORE, exported) == []


def test_lost_assertions_and_tests_are_named():
    assert weakened(BEFORE, BEFORE.replace("    assert op_jit(x).shape == op(x).shape\n", "")) == [
        "`test_scripts` lost 1 assertion(s)"]
    assert weakened(BEFORE, "import torch\n") == ["`test_scripts` is gone"]


def _test_files(root) -> dict[str, str]:
    return {p.relative_to(root).as_posix(): p.read_text(encoding="utf-8") for p in source_files(root)
            if p.name.startswith("test_") or p.name.endswith("_test.py")}


CASES = [c for c in all_cases() if c.after.is_dir() and _test_files(c.before)]


@pytest.mark.parametrize("name", [c.name for c in CASES])
def test_the_goldens_keep_every_test_testing(name):
    case = next(c for c in CASES if c.name == name)
    before, after = _test_files(case.before), _test_files(case.after)
    problems = [f"{rel}: {p}" for rel in before for p in weakened(before[rel], after.get(rel, ""))]
    assert not problems, "\n".join(problems)


MATCHER = '''
import torch
from torch import nn


def mutual(d):
    vals, idx = d.min(1)
    keep = vals < 0.9
    return torch.stack([torch.nonzero(keep).squeeze(1), idx[keep]], 1)


class Matcher(nn.Module):
    def forward(self, a: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
        m = mutual(torch.cdist(a, b))
        if m.size(0) == 0:
            return torch.full((1, 2), -1, dtype=torch.long)
        return m
'''

MATCHER_TESTS = '''
import torch
from matching import Matcher


def test_matcher_scripts():
    op = Matcher()
    op_jit = torch.jit.script(op)
    a, b = torch.rand(6, 8), torch.rand(7, 8)
    torch.testing.assert_close(op(a, b), op_jit(a, b))


def test_matcher_rows_are_pairs():
    op_jit = torch.jit.script(Matcher())
    assert op_jit(torch.rand(6, 8), torch.rand(7, 8)).shape[1] == 2
'''


def test_a_scriptability_test_of_a_module_export_refuses_keeps_testing():
    """Export stops at the matcher's decision on a data-dependent size: the test that compares the
    module with its script stays TorchScript (run eager, it would compare the module with itself);
    the test that only checks the scripted module's result runs it eager."""
    files = {"matching.py": textwrap.dedent(MATCHER).encode(), "tests/test_matching.py": textwrap.dedent(MATCHER_TESTS).encode()}
    results = {r.path: r for r in run_tree(files, Options(fix="unsafe", plan="unsafe"))}
    test = results["tests/test_matching.py"]
    after = test.new.decode() if test.changed else MATCHER_TESTS
    assert weakened(textwrap.dedent(MATCHER_TESTS), after) == []
    assert "op_jit = torch.jit.script(op)" in after
    assert "op_jit = Matcher()" in after or "op_jit = torch.jit.script(Matcher())" not in after
    (held,) = [f for f in test.findings if f.line == 8]
    assert "this test would compare `op` with itself" in held.message


OPS = {
    "ops/__init__.py": "from . import feature\n",
    "ops/feature.py": "import torch\n\n\ndef laf_scale(laf: torch.Tensor) -> torch.Tensor:\n    return laf.abs().sum(-1)\n\n\n"
                      "def distort(p: torch.Tensor) -> torch.Tensor:\n    return p * 2\n",
    "tests/test_ops.py": '''
import torch
import ops.feature
from ops.feature import distort


class TestLaf:
    def test_jit(self):
        img = torch.rand(1, 2, 2, 3)
        model = ops.feature.laf_scale
        model_jit = torch.jit.script(ops.feature.laf_scale)
        torch.testing.assert_close(model(img), model_jit(img))


def test_distort():
    p = torch.rand(3, 2)
    op_script = torch.jit.script(distort)
    actual = op_script(p)
    expected = distort(p)
    torch.testing.assert_close(actual, expected)


def test_distort_values():
    op_script = torch.jit.script(distort)
    torch.testing.assert_close(op_script(torch.ones(2)), torch.full((2,), 2.0))
''',
}


def test_scripted_functions_compared_through_an_alias_or_an_earlier_result_keep_their_script():
    """`model = f` beside `torch.jit.script(f)`, and `expected = f(p)` computed after the script ran:
    with `f` in the script's place the test would compare `f` with itself; a test that checks the
    script against known values loses nothing when the function takes its place."""
    files = {rel: textwrap.dedent(code).encode() for rel, code in OPS.items()}
    (test,) = [r for r in run_tree(files, Options(fix="unsafe", plan="unsafe")) if r.path == "tests/test_ops.py"]
    after = test.new.decode() if test.changed else files["tests/test_ops.py"].decode()
    assert weakened(files["tests/test_ops.py"].decode(), after) == []
    assert "model_jit = torch.jit.script(ops.feature.laf_scale)" in after
    assert after.count("op_script = torch.jit.script(distort)") == 1 and "    op_script = distort\n" in after
    held = [f for f in test.findings if "with itself" in f.message]
    assert len(held) == 2
