"""Code that torch.export does not trace once `torch.jit.is_scripting()` is written
`torch.compiler.is_exporting()` (ts2export.model.eager_branches), and what the program model
decides with it: what export would stop at there does not hold an export back, unless the fix
that makes export skip it is itself held back."""

from __future__ import annotations

import textwrap

import pytest

from ts2export.engine import Options, Task, analyze
from ts2export.model.eager_branches import eager_only_lines, only_called_from
from ts2export.model.pyfile import PyFile

SHAPES = '''
import torch

def a(x):
    if not torch.jit.is_scripting():
        print(float(x))
        x = x + 1
    return x

def b(x):
    if torch.jit.is_scripting():
        y = x
    else:
        y = float(x)
    return y

def c(x):
    if torch.jit.is_scripting():
        return x
    check(float(x))
    return x * 2

def d(x):
    if not torch.jit.is_scripting() and x.dim() > 1:
        print(float(x))
    return x

def e(x):
    if torch.jit.is_scripting():
        x = x + 1
    return x
'''


def _line(source: str, needle: str, nth: int = 1) -> int:
    hits = [i for i, line in enumerate(source.splitlines(), 1) if needle in line]
    return hits[nth - 1]


@pytest.mark.parametrize("nth,first,last", [
    (1, "print(float(x))", "x = x + 1"),  # if not CALL: its body
    (2, "y = float(x)", "y = float(x)"),  # if CALL: ... else: its else
    (3, "check(float(x))", "return x * 2"),  # if CALL: return ...: the rest of the block
])
def test_the_branch_that_runs_only_in_eager_python(nth, first, last):
    f = PyFile("m.py", SHAPES.encode())
    got = eager_only_lines(f, _line(SHAPES, "torch.jit.is_scripting()", nth))
    assert got == (_line(SHAPES, first), _line(SHAPES, last))


@pytest.mark.parametrize("nth", [4, 5])
def test_other_conditions_are_left_alone(nth):
    # `CALL and other`: export may trace the branch; `if CALL:` alone skips nothing in eager code
    f = PyFile("m.py", SHAPES.encode())
    assert eager_only_lines(f, _line(SHAPES, "torch.jit.is_scripting()", nth)) is None


def test_a_method_only_eager_branches_call():
    src = "class M:\n    def forward(self, x):\n        if not e():\n            self.check(x)\n        return x\n\n    def check(self, x):\n        pass\n"
    f = PyFile("m.py", src.encode())
    assert only_called_from([f], "check", {"m.py": [(4, 4)]})
    assert not only_called_from([f], "check", {})
    other = PyFile("n.py", b"def g(m, x):\n    m.check(x)\n")
    assert not only_called_from([f, other], "check", {"m.py": [(4, 4)]})


MODEL = textwrap.dedent('''
    import torch


    class Checked(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.lin = torch.nn.Linear(4, 2)

        @torch.jit.unused
        def _check(self, x: torch.Tensor) -> None:
            if float(x.abs().max()) > 1e4:
                raise ValueError("too large")

        def forward(self, x):
            if not torch.jit.is_scripting():
                self._check(x)
            return self.lin(x)


    model = Checked().eval()
    torch.jit.save(torch.jit.script(model), "m.pt")
    served = torch.jit.load("m.pt")
    y = served(torch.ones(3, 4))
''')


def _held(code: str) -> dict[str, str]:
    [res] = analyze([Task("m.py", "python", data=code.encode())], Options(fix="unsafe"), jobs=1).results
    return {f.rule_id: f.held for f in res.findings if f.held}, sorted(f.rule_id for f in res.fixed)


def test_what_export_would_stop_at_in_an_eager_only_check_does_not_hold_the_export():
    held, fixed = _held(MODEL)
    assert "TSX302" not in held and "TSX302" in fixed and "TSX501" in fixed, held


def test_unless_the_fix_that_makes_export_skip_it_is_held():
    # a second script call of the class stays (its inputs are not shown): TSX501 is held there
    # (TorchScript cannot compile torch.compiler.is_exporting()), so an export would trace the check
    code = MODEL + "\n\ndef later(m):\n    return torch.jit.script(m)\n\n\nlater(Checked())\n"
    held, fixed = _held(code)
    assert "TSX501" in held and "TSX501" not in fixed
    assert "TSX302" not in fixed and held["TSX302"].startswith("torch.export would stop at TSX401 in `Checked._check`")
