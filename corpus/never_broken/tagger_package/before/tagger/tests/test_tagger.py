import torch

from tagger.model import Tags, build_tagger

CFG = {"name": "tagger", "version": 2, "dim": 6, "tags": 4, "seed": 3}


def test_scripts_to_a_script_module():
    m = torch.jit.script(build_tagger(CFG))
    assert isinstance(m, torch.jit.ScriptModule)
    assert "forward" in str(m.graph) or m.graph is not None


def test_outputs_are_tags():
    out = build_tagger(CFG)(torch.randn(1, 6))  # one example row
    assert isinstance(out, Tags) and out.probs.shape == (1, 4)
