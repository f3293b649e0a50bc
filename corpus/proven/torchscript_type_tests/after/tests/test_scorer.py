import torch

from scorer import compile_scorer


def test_it_is_a_script_module():
    s = compile_scorer()
    assert isinstance(s, torch.jit.ScriptModule)
    assert "forward" in s.code


def test_scores():
    s = compile_scorer()
    assert s(torch.randn(2, 4)).shape == (2,)
