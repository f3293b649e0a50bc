"""convert: corpus models, both strategies, multi-method archives, and one-line errors."""

from typing import Optional

import pytest
import torch

from ts2export.artifact.loading import load_pt2

from .conftest import CHAIN_MODELS, load_corpus, save_torchscript


@pytest.mark.parametrize("name", CHAIN_MODELS)
def test_corpus_models_convert(artifacts, name):
    programs, meta = load_pt2(artifacts.pt2(name))
    _, methods = artifacts.specs(name)
    assert sorted(programs) == sorted(methods or ["forward"])
    assert meta["tool"] == "ts2export convert" and set(meta["methods"]) == set(programs)
    model, example, _, _ = load_corpus(name)
    with torch.inference_mode():
        expected = model(*example)
        got = programs["forward"].module()(*example)
    torch.testing.assert_close(got, expected)


def test_user_dims_become_export_dims_with_ranges(artifacts):
    ep = load_pt2(artifacts.pt2("multi_input_mlp"))[0]["forward"]
    (rng,) = ep.range_constraints.values()
    assert (int(rng.lower), int(rng.upper)) == (1, 32)
    shapes = [n.meta["val"].shape for n in ep.graph.nodes if n.op == "placeholder" and n.name in ("x", "y", "x_1", "y_1")]
    assert len(shapes) == 2 and shapes[0][0] is not None and str(shapes[0][0]) == str(shapes[1][0])
    assert int(shapes[0][1]) == 16 and int(shapes[1][1]) == 8


def test_scripted_if_becomes_cond(tmp_path, cli):
    model, example, specs, _ = load_corpus("branchy")
    old = save_torchscript(model, example, "script", tmp_path / "branchy_scripted.pt")
    code, out, err = cli("convert", old, "-o", tmp_path / "b.pt2", "--input", "float32[B=2..8,8]")
    assert code == 0, err
    assert "TS2EPConverter" in out
    ep = load_pt2(tmp_path / "b.pt2")[0]["forward"]
    assert any(n.target is torch.ops.higher_order.cond for n in ep.graph.nodes)
    for x in (torch.full((3, 8), 2.0), torch.randn(3, 8)):
        torch.testing.assert_close(ep.module()(x), model(x))


def test_loop_with_input_dependent_trip_count_uses_the_interpreter(artifacts, cli, tmp_path):
    code, out, err = cli("convert", artifacts.torchscript("loop_accumulate"), "-o", tmp_path / "l.pt2", "-i", "float32[2,5,4]", "-v")
    assert code == 0, err
    assert "converted with interpreter" in out and "prim::Loop" in out


def test_loop_over_a_dynamic_dim_is_refused_with_advice(artifacts, cli, tmp_path):
    code, out, err = cli("convert", artifacts.torchscript("loop_accumulate"), "-o", tmp_path / "l.pt2", "-i", "float32[B=1..8,5,4]")
    assert code == 2
    assert err.startswith("error: cannot convert forward: the TorchScript code fixes the size of B")
    assert "Traceback" not in err and not (tmp_path / "l.pt2").exists()


class WhileSum(torch.nn.Module):
    def forward(self, x: torch.Tensor) -> torch.Tensor:
        while bool(x.sum() < 100):
            x = x * 2
        return x


class OptionalBias(torch.nn.Module):
    def forward(self, x: torch.Tensor, bias: Optional[torch.Tensor] = None) -> torch.Tensor:
        if bias is not None:
            return x + bias
        return x * 2


def test_data_dependent_loop_names_the_node_and_the_fix(tmp_path, cli):
    old = save_torchscript(WhileSum(), None, "script", tmp_path / "w.pt")
    code, out, err = cli("convert", old, "-o", tmp_path / "w.pt2", "-i", "float32[3]")
    assert code == 2
    assert "prim::Loop" in err and "ts2export apply" in err and len(err.strip().splitlines()) == 1


@pytest.mark.parametrize("specs", [["float32[3]", "float32[3]"], ["float32[3]"]])
def test_optional_inputs_convert(tmp_path, cli, specs):
    old = save_torchscript(OptionalBias(), None, "script", tmp_path / "o.pt")
    args = [a for s in specs for a in ("-i", s)]
    code, out, err = cli("convert", old, "-o", tmp_path / "o.pt2", *args)
    assert code == 0, err
    ep = load_pt2(tmp_path / "o.pt2")[0]["forward"]
    x = torch.arange(3.0)
    expected = x + x if len(specs) == 2 else x * 2
    torch.testing.assert_close(ep.module()(*([x] * len(specs))), expected)


def test_multi_method_listing_and_packaging(artifacts, cli, tmp_path):
    old = artifacts.torchscript("multi_method")
    code, out, _ = cli("convert", old, "--list-methods")
    assert code == 0 and out.splitlines() == ["forward(x: Tensor)", "encode(x: Tensor)"]
    code, out, err = cli("convert", old, "-o", tmp_path / "f.pt2", "-i", "float32[B=1..8,10]")
    assert code == 0 and "not converted (use --method): encode" in out
    programs, _ = load_pt2(artifacts.pt2("multi_method"))
    x = torch.randn(4, 10)
    sm = torch.jit.load(str(old))
    torch.testing.assert_close(programs["encode"].module()(x), sm.encode(x))
    torch.testing.assert_close(programs["forward"].module()(x), sm(x))


def test_inputs_file(artifacts, cli, tmp_path):
    ids = torch.randint(0, 1000, (3, 7))
    torch.save((ids,), tmp_path / "in.pt")
    code, out, err = cli("convert", artifacts.torchscript("embedding_bag"), "-o", tmp_path / "e.pt2", "--inputs", tmp_path / "in.pt")
    assert code == 0, err
    ep = load_pt2(tmp_path / "e.pt2")[0]["forward"]
    torch.testing.assert_close(ep.example_inputs[0][0], ids)


def test_bad_inputs_and_files(artifacts, cli, tmp_path):
    old = artifacts.torchscript("small_cnn")
    garbage = tmp_path / "garbage.pt"
    garbage.write_bytes(b"not a model at all")
    truncated = tmp_path / "truncated.pt"
    truncated.write_bytes(old.read_bytes()[:2000])
    checkpoint = tmp_path / "state.pt"
    torch.save({"w": torch.ones(2)}, checkpoint)
    out = tmp_path / "x.pt2"
    cases = [
        ((old, "-o", out), "keeps no input shapes"),
        ((old, "-o", out, "-i", "float32[2,3,16,16]", "-i", "float32[2]"), "got 2 input(s), the module takes 1"),
        ((old, "-o", out, "-i", "float32[2,3,16]"), "cannot convert forward"),
        ((old, "-o", out, "-m", "decode", "-i", "float32[2,3,16,16]"), "no method 'decode'"),
        ((garbage, "-o", out, "-i", "float32[2]"), "not a TorchScript archive"),
        ((truncated, "-o", out, "-i", "float32[2]"), "not a TorchScript archive"),
        ((checkpoint, "-o", out, "-i", "float32[2]"), "not TorchScript (a torch.save checkpoint?)"),
        ((tmp_path / "missing.pt", "-o", out, "-i", "float32[2]"), "no such file"),
        ((old, "-o", tmp_path / "nodir" / "x.pt2", "-i", "float32[2,3,16,16]"), "output directory does not exist"),
        ((old, "-o", out, "-i", "float32[2,3,16,16]", "--inputs", checkpoint), "not both"),
    ]
    for args, message in cases:
        code, stdout, err = cli("convert", *args)
        assert code == 2, (args, stdout, err)
        assert err.startswith("error: ") and message in err, (args, err)
        assert "Traceback" not in err and len(err.strip().splitlines()) == 1
    assert not out.exists()
    assert not [p for p in tmp_path.iterdir() if p.name.endswith(".tmp")]


@pytest.mark.slow
def test_isolated_convert_matches_in_process(artifacts, cli, tmp_path):
    code, out, err = cli(
        "convert", artifacts.torchscript("multi_input_mlp"), "-o", tmp_path / "iso.pt2",
        "-i", "float32[B=1..32,16]", "-i", "float32[B,8]", "--isolate", "--timeout", "120",
    )
    assert code == 0, err
    programs, meta = load_pt2(tmp_path / "iso.pt2")
    assert meta["methods"]["forward"]["specs"] == ["float32[B=1..32,16]", "float32[B,8]"]


def test_torch_export_load_reads_forward(artifacts):
    ep = torch.export.load(str(artifacts.pt2("multi_method")))
    x = torch.randn(2, 10)
    sm = torch.jit.load(str(artifacts.torchscript("multi_method")))
    torch.testing.assert_close(ep.module()(x), sm(x))


def _relu2(x: torch.Tensor) -> torch.Tensor:
    return torch.relu(x) * 2


class Forky(torch.nn.Module):
    def forward(self, x: torch.Tensor) -> torch.Tensor:
        fut = torch.jit.fork(_relu2, x)
        return x + 1 + torch.jit.wait(fut)


@torch.jit.script
class Affine:
    def __init__(self, scale: float, shift: float):
        self.scale = scale
        self.shift = shift


class WithScriptClass(torch.nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.cfg = Affine(2.0, 0.5)
        self.lin = torch.nn.Linear(4, 4)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.lin(x) * self.cfg.scale + self.cfg.shift


@pytest.mark.parametrize(
    "module, strategy",
    [(Forky, "TS2EPConverter"), (WithScriptClass, "interpreter")],
)
def test_fork_and_script_class_attributes_convert_and_verify(tmp_path, cli, module, strategy):
    old = save_torchscript(module().eval(), None, "script", tmp_path / "m.pt")
    code, out, err = cli("convert", old, "-o", tmp_path / "m.pt2", "-i", "float32[B=1..8,4]", "-v")
    assert code == 0, err
    assert f"converted with {strategy}" in out
    code, out, err = cli("verify", old, tmp_path / "m.pt2")
    assert code == 0, out + err


def test_unloadable_optimized_artifact_gets_a_hint(tmp_path, cli):
    model, example, _, _ = load_corpus("small_cnn")
    path = tmp_path / "ofi.pt"
    torch.jit.optimize_for_inference(torch.jit.script(model)).save(str(path))
    code, _, err = cli("convert", path, "-o", tmp_path / "x.pt2", "-i", "float32[2,3,16,16]")
    assert code == 2
    assert "cannot load TorchScript" in err and "convert the artifact saved before freezing" in err


class GatedMethod(torch.nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.lin = torch.nn.Linear(4, 4)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.lin(x)

    @torch.jit.export
    def gate(self, x: torch.Tensor, k: int = 2) -> torch.Tensor:
        if x.sum() > 0:
            return self.lin(x) * k
        return x - 1


def test_exported_method_with_a_tensor_branch_goes_through_the_converter(tmp_path, cli):
    old = save_torchscript(GatedMethod().eval(), None, "script", tmp_path / "g.pt")
    code, out, err = cli("convert", old, "-o", tmp_path / "g.pt2", "-m", "gate", "-i", "gate:float32[B=2..8,4]")
    assert code == 0, err
    assert "gate: converted with TS2EPConverter" in out
    ep = load_pt2(tmp_path / "g.pt2")[0]["gate"]
    assert any(n.target is torch.ops.higher_order.cond for n in ep.graph.nodes)
    code, out, err = cli("verify", old, tmp_path / "g.pt2", "--samples", "6")
    assert code == 0, out + err
