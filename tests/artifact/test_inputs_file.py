"""--inputs FILE: any pytree of tensors the method takes (a dict, nested tuples, keyword arguments),
for convert and verify."""

import pytest
import torch

from ts2export.artifact.errors import ArtifactError
from ts2export.artifact.inputs import bind_inputs, load_inputs_file
from ts2export.artifact.loading import load_pt2

from .conftest import save_torchscript


class DictIn(torch.nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.lin = torch.nn.Linear(8, 4)

    def forward(self, batch: dict[str, torch.Tensor]) -> torch.Tensor:
        return self.lin(batch["features"]) * batch["mask"]


class NestedIn(torch.nn.Module):
    def forward(self, x: torch.Tensor, pair: tuple[torch.Tensor, torch.Tensor], bias: float = 1.0) -> tuple[torch.Tensor, torch.Tensor]:
        return x * pair[0] + bias, pair[1] - x


class ListIn(torch.nn.Module):
    def forward(self, xs: list[torch.Tensor]) -> torch.Tensor:
        return torch.stack(xs).sum(0)


def _params(module):
    return list(torch.jit.script(module).forward.schema.arguments)[1:]


def test_binding_follows_the_schema():
    x, a, b = torch.randn(4), torch.randn(4), torch.randn(4)
    assert bind_inputs({"features": x, "mask": a}, _params(DictIn()))[0].keys() == {"features", "mask"}
    args = bind_inputs((x, (a, b)), _params(NestedIn()))
    assert args[0] is x and args[1] == (a, b)
    args = bind_inputs({"pair": (a, b), "x": x}, _params(NestedIn()))  # keywords, in parameter order
    assert args[0] is x and args[1] == (a, b)
    assert bind_inputs([a, b], _params(ListIn())) == ([a, b],)  # one list parameter takes the list
    with pytest.raises(ArtifactError, match=r"holds one tensor, which does not fit forward\(batch: Dict\[str, Tensor\]\)"):
        bind_inputs(x, _params(DictIn()))
    with pytest.raises(ArtifactError, match=r"holds a dict with keys 'x', 'y', which does not fit forward\(x: Tensor, pair"):
        bind_inputs({"x": x, "y": a}, _params(NestedIn()))
    with pytest.raises(ArtifactError, match=r"gives pair by name but not x"):
        bind_inputs({"pair": (a, b)}, _params(NestedIn()))
    with pytest.raises(ArtifactError, match=r"holds a tuple of 3, which does not fit"):
        bind_inputs((x, a, b), _params(NestedIn()))


def test_the_file_must_hold_tensors(tmp_path):
    torch.save({"a": torch.randn(2), "n": 3}, tmp_path / "mixed.pt")
    with pytest.raises(ArtifactError, match=r"inputs must be tensors \(in tuples, lists or dicts\); \['n'\] is int"):
        load_inputs_file(tmp_path / "mixed.pt")
    torch.save(7, tmp_path / "seven.pt")
    with pytest.raises(ArtifactError, match="it holds int"):
        load_inputs_file(tmp_path / "seven.pt")


def test_a_dict_input_converts_and_verifies(tmp_path, cli):
    torch.manual_seed(0)
    old = save_torchscript(DictIn().eval(), None, "script", tmp_path / "dict_in.pt")
    batch = {"features": torch.randn(3, 8), "mask": torch.randint(0, 2, (3, 4)).float()}
    torch.save(batch, tmp_path / "batch.pt")
    code, out, err = cli("convert", old, "-o", tmp_path / "dict_in.pt2", "--inputs", tmp_path / "batch.pt")
    assert code == 0, err
    assert "inputs float32[3,8], float32[3,4]" in out
    ep = load_pt2(tmp_path / "dict_in.pt2")[0]["forward"]
    with torch.inference_mode():
        torch.testing.assert_close(ep.module()(batch), torch.jit.load(str(old))(batch))
    code, out, err = cli("verify", old, tmp_path / "dict_in.pt2", "--inputs", tmp_path / "batch.pt")
    assert code == 0, out + err
    assert "forward  file" in out and out.strip().splitlines()[-1].startswith("PASS: 1 comparison(s)")
    # generated samples follow the dict structure stored in the program
    code, out, err = cli("verify", old, tmp_path / "dict_in.pt2")
    assert code == 0 and "PASS: 4 comparison(s)" in out, out + err


def test_nested_tuples_and_keywords(tmp_path, cli):
    old = save_torchscript(NestedIn(), None, "script", tmp_path / "nested.pt")
    x, a, b = torch.randn(5), torch.randn(5), torch.randn(5)
    torch.save((x, (a, b)), tmp_path / "args.pt")
    torch.save({"x": x, "pair": [a, b]}, tmp_path / "kwargs.pt")
    code, out, err = cli("convert", old, "-o", tmp_path / "nested.pt2", "--inputs", tmp_path / "args.pt")
    assert code == 0, err
    for inputs in ("args.pt", "kwargs.pt"):
        code, out, err = cli("verify", old, tmp_path / "nested.pt2", "--inputs", tmp_path / inputs)
        assert code == 0, (inputs, out, err)
    torch.save({"x": x, "pairs": (a, b)}, tmp_path / "wrong.pt")
    code, out, err = cli("verify", old, tmp_path / "nested.pt2", "--inputs", tmp_path / "wrong.pt")
    assert code == 2 and "holds a dict with keys 'x', 'pairs', which does not fit forward(x: Tensor, pair: Tuple[Tensor, Tensor]" in err
    torch.save((x, (a, b.double())), tmp_path / "dtype.pt")
    code, out, err = cli("verify", old, tmp_path / "nested.pt2", "--inputs", tmp_path / "dtype.pt")
    assert code == 2 and "input 2 has dtype float64, the program expects float32" in err
