"""A rule that declares ``keeps_torchscript`` (or ``keeps_tracing``) has its fix applied inside code
that an entry point which stays TorchScript still compiles (or traces). These tests prove the
claims: each program below keeps its TorchScript entry point (a rule of another family would
rewrite it, and only the rule under test runs), gets the rule's fix, and must compute the same
under TorchScript afterwards. Rules without the claim are held back there instead (tested by the
corpus family never_broken)."""

from __future__ import annotations

import textwrap
import warnings

import pytest
import torch

from ts2export.engine import Options, Task, analyze
from ts2export.engine.registry import all_rules, rule_by_id

NAMED_TUPLE_MODEL = """
        import torch
        from typing import NamedTuple

        class Out(NamedTuple):
            y: torch.Tensor
            z: torch.Tensor

        class M(torch.nn.Module):
            def forward(self, x) -> Out:
                return Out(x + 1, x @ x.t())
        """

SCRIPTED = {
    "TSX002": """
        import torch

        class M(torch.nn.Module):
            def forward(self, x):
                if torch.jit.__name__ == "torch.jit":
                    return x * 2
                return x

        OUT = torch.jit.script(M())(torch.ones(3))
        """,
    "TSX102": """
        import torch

        class M(torch.nn.Module):
            @torch.jit.export
            def helper(self, x):
                return x * 2

            def forward(self, x):
                return self.helper(x) + 1

        model = torch.jit.script(M())
        OUT = [model(torch.arange(4.0)), model.helper(torch.ones(2))]
        """,
    "TSX105": """
        import torch

        @torch.jit.script
        def gelu(x: torch.Tensor) -> torch.Tensor:
            return x * torch.sigmoid(1.702 * x)

        @torch.jit.script
        class Pair:
            def __init__(self, a: int, b: int):
                self.a = a
                self.b = b

        class M(torch.nn.Module):
            def forward(self, x):
                p = Pair(2, 3)
                return gelu(x) * p.a + p.b

        model = torch.jit.script(M())
        OUT = model(torch.linspace(-2, 2, 9))
        """,
    "TSX202": """
        import torch
        from typing import List

        class M(torch.jit.ScriptModule):
            def __init__(self):
                super().__init__()
                self.w = torch.jit.Attribute([1.5, -2.0], List[float])

            @torch.jit.script_method
            def forward(self, x):
                return x * self.w[0] + self.w[1]

        model = M()
        OUT = model(torch.arange(3.0))
        """,
    "TSX203": """
        import torch

        class M(torch.nn.Module):
            k: torch.jit.Final[int]

            def __init__(self):
                super().__init__()
                self.k = 3

            def forward(self, x):
                return x * self.k

        model = torch.jit.script(M())
        OUT = model(torch.arange(3.0))
        """,
    "TSX204": """
        import torch
        from typing import Optional

        class M(torch.nn.Module):
            def forward(self, x, bias: Optional[torch.Tensor] = None):
                if torch.jit.isinstance(bias, torch.Tensor):
                    return x + bias
                return x

        model = torch.jit.script(M())
        OUT = [model(torch.ones(2), torch.full((2,), 3.0)), model(torch.ones(2))]
        """,
    # the scripted module still returns the named tuple
    "TSX309": NAMED_TUPLE_MODEL + """
        model = torch.jit.script(M())
        out = model(torch.arange(3.0))
        OUT = [torch.tensor(isinstance(out, tuple) and out._fields == ("y", "z")), out.y, out.z]
        """,
    "TSX503": """
        import torch

        class M(torch.nn.Module):
            def __init__(self):
                super().__init__()
                self.a = torch.nn.Linear(4, 4)
                self.b = torch.nn.Linear(4, 4)

            def forward(self, x):
                fut = torch.jit.fork(self.a, x)
                y = self.b(x)
                return torch.jit.wait(fut) + y

        torch.manual_seed(0)
        model = torch.jit.script(M())
        OUT = model(torch.ones(2, 4))
        """,
}

TRACED = {
    "TSX309": NAMED_TUPLE_MODEL,  # the traced one still returns a plain tuple
    "TSX104": """
        import torch

        class M(torch.nn.Module):
            @torch.jit._overload_method
            def shift(self, x: torch.Tensor, k: int) -> torch.Tensor:
                ...

            @torch.jit._overload_method
            def shift(self, x: torch.Tensor, k: float) -> torch.Tensor:
                ...

            def shift(self, x, k):
                return x + k

            def forward(self, x):
                return self.shift(x, 2)
        """,
    "TSX108": """
        import torch

        @torch.jit.interface
        class Op(torch.nn.Module):
            def forward(self, x: torch.Tensor) -> torch.Tensor:
                pass

        class M(torch.nn.Module):
            op: Op

            def __init__(self):
                super().__init__()
                self.op = torch.nn.ReLU()

            def forward(self, x):
                return self.op(x) * 2
        """,
    "TSX101": """
        import torch

        class M(torch.nn.Module):
            @torch.jit.unused
            def debug(self, x):
                return x.numpy()

            def forward(self, x):
                return x.relu() * 2
        """,
    "TSX201": """
        import torch
        from typing import List

        class M(torch.nn.Module):
            def forward(self, x):
                sizes = torch.jit.annotate(List[int], [])
                for d in x.shape:
                    sizes.append(d)
                return x * len(sizes)
        """,
    "TSX501": """
        import torch

        class M(torch.nn.Module):
            def forward(self, x):
                if torch.jit.is_scripting():
                    return x - 1
                return x + 1
        """,
    "TSX504": """
        import torch

        class M(torch.nn.Module):
            def forward(self, x):
                if x.dim() != 2:
                    raise torch.jit.Error("expected a matrix")
                return x.t()
        """,
}


def _apply(rule_id: str, code: str) -> str:
    mode = "safe" if rule_by_id(rule_id).applicability.value == "safe" else "unsafe"
    task = Task("prog.py", "python", data=code.encode())
    [res] = analyze([task], Options(select=(rule_id,), fix="unsafe" if mode == "unsafe" else "safe"), jobs=1).results
    assert res.error is None and not res.notes, (res.error, res.notes)
    assert res.changed, f"{rule_id}: the fix was not applied inside code that stays compiled: {[f.held for f in res.findings]}"
    return res.new.decode()


def _run(code: str, tmp_path, name: str) -> dict:
    # TorchScript reads the source of what it compiles: run the program from a file.
    import importlib.util
    import sys

    path = tmp_path / f"{name}.py"
    path.write_text(code)
    spec = importlib.util.spec_from_file_location(name, path)
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            spec.loader.exec_module(module)
    finally:
        sys.modules.pop(name, None)
    return vars(module)


@pytest.mark.parametrize("rule_id", sorted(SCRIPTED))
def test_fix_keeps_scripted_code_working(rule_id, tmp_path):
    assert rule_by_id(rule_id).keeps_torchscript
    code = textwrap.dedent(SCRIPTED[rule_id])
    fixed = _apply(rule_id, code)
    before = _run(code, tmp_path, f"before_{rule_id}")["OUT"]
    after = _run(fixed, tmp_path, f"after_{rule_id}")["OUT"]
    torch.testing.assert_close(after, before)


@pytest.mark.parametrize("rule_id", sorted(TRACED))
def test_fix_keeps_traced_code_working(rule_id, tmp_path):
    assert rule_by_id(rule_id).keeps_tracing
    code = textwrap.dedent(TRACED[rule_id]) + "\nmodel = torch.jit.trace(M(), torch.randn(3, 3))\n"
    fixed = _apply(rule_id, code)
    x = torch.randn(5, 3)
    before = _run(code, tmp_path, f"tb_{rule_id}")["model"](x)
    after = _run(fixed, tmp_path, f"ta_{rule_id}")["model"](x)
    torch.testing.assert_close(after, before)


def test_every_claim_is_proven_here():
    """A rule claiming keeps_torchscript or keeps_tracing has a program above (the fusion knobs
    aside: their settings only change how TorchScript runs code, never what it computes, and they
    cannot appear inside compiled code)."""
    knobs = {"TSX603", "TSX604", "TSX605", "TSX606", "TSX607", "TSX608"}
    for rule in all_rules():
        if rule.id in knobs:
            continue
        if getattr(rule, "keeps_torchscript", False):
            assert rule.id in SCRIPTED, f"{rule.id} claims keeps_torchscript without a test program"
        if getattr(rule, "keeps_tracing", False) and not getattr(rule, "keeps_torchscript", False):
            assert rule.id in TRACED, f"{rule.id} claims keeps_tracing without a test program"
