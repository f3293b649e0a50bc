"""The migrated program of corpus/catalog_types/script_module_full exports with torch.export and
the exported program computes what the eager model computes; the TorchScript original could not
be exported (that is why the rules TSX102-TSX108 and TSX202-TSX204 rewrite it)."""

import warnings
from pathlib import Path

import pytest

from ts2export.harness.corpus import import_program

torch = pytest.importorskip("torch")

CASE = Path(__file__).resolve().parent.parent / "corpus" / "catalog_types" / "script_module_full"


def _load(tree: str, name: str):
    return import_program(CASE / tree / "main.py", name)


def _model(module):
    torch.manual_seed(0)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DeprecationWarning)
        model = module.Model()
    return model.eval()


def test_original_is_a_script_module_that_export_refuses():
    model = _model(_load("before", "catalog_types_before"))
    assert isinstance(model, torch.jit.ScriptModule)
    with pytest.raises(Exception, match="ScriptModule"):
        torch.export.export(model, (torch.randn(3, 6), 1))


@pytest.mark.parametrize("index", [0, 1, 2])
def test_migrated_model_exports_and_matches_eager(index):
    module = _load("after", f"catalog_types_after_{index}")
    model = _model(module)
    assert not isinstance(model, torch.jit.ScriptModule)
    for child in model.modules():
        assert not isinstance(child, torch.jit.ScriptModule), type(child)
    x = torch.randn(3, 6)
    ep = torch.export.export(model, (x, index))
    with torch.no_grad():
        expected = model(x, index)
        got = ep.module()(x, index)
        torch.testing.assert_close(got, expected)
        # Other inputs of the exported shape give the same results too.
        x2 = torch.randn(3, 6)
        torch.testing.assert_close(ep.module()(x2, index), model(x2, index))


def test_migrated_model_matches_the_torchscript_original():
    before = _model(_load("before", "catalog_types_before_cmp"))
    after = _model(_load("after", "catalog_types_after_cmp"))
    after.load_state_dict(before.state_dict())
    x = torch.randn(5, 6)
    with torch.no_grad():
        for i in range(3):
            torch.testing.assert_close(after(x, i), before(x, i))
