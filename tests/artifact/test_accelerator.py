"""verify on an accelerator (CUDA, XPU, MPS): runs only where torch.accelerator finds one."""

import json

import pytest
import torch

pytestmark = [
    pytest.mark.accelerator,
    pytest.mark.skipif(
        not torch.accelerator.is_available(), reason="no torch.accelerator device (CUDA, XPU or MPS) on this machine"
    ),
]

MODELS = ["small_cnn", "multi_input_mlp", "dict_tuple_outputs", "embedding_bag", "mx_block_scaled", "mixed_dtypes", "multi_method"]


def _device() -> str:
    acc = torch.accelerator.current_accelerator()
    return f"{acc.type}:{torch.accelerator.current_device_index()}"


@pytest.mark.parametrize("name", MODELS)
def test_verify_on_the_accelerator(artifacts, cli, name):
    code, out, err = cli("verify", artifacts.torchscript(name), artifacts.pt2(name), "--device", "auto", "--format", "json")
    assert code == 0, out + err
    report = json.loads(out)
    assert report["device"] == _device() and not report["notes"]
    assert report["status"] == "pass"


def test_explicit_device_and_altered_program(artifacts, cli, tmp_path):
    from .test_verify import _perturbed_program

    code, out, err = cli("verify", artifacts.torchscript("small_cnn"), artifacts.pt2("small_cnn"), "--device", _device())
    assert code == 0, out + err
    code, out, _ = cli("verify", artifacts.torchscript("small_cnn"), _perturbed_program(tmp_path), "--device", _device())
    assert code == 1 and "MISMATCH" in out


def test_pte_runs_on_cpu_next_to_an_accelerator(artifacts, cli):
    pytest.importorskip("executorch", reason="the .pte part needs executorch")
    code, out, err = cli(
        "verify", artifacts.torchscript("small_cnn"), artifacts.pte("small_cnn"), "-i", "float32[B=1..8,3,16,16]", "--device", "auto"
    )
    assert code == 0, out + err
    assert "the .pte runs on cpu" in out


def test_missing_device_index_is_an_error(artifacts, cli):
    acc = torch.accelerator.current_accelerator()
    n = torch.accelerator.device_count()
    code, _, err = cli("verify", artifacts.torchscript("small_cnn"), artifacts.pt2("small_cnn"), "--device", f"{acc.type}:{n}")
    assert code == 2 and "is not present" in err


class Ramp(torch.nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.lin = torch.nn.Linear(16, 16)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.lin(x) + torch.linspace(0, 1, x.shape[-1], device=x.device)


def test_an_artifact_traced_on_the_device_converts_there(cli, tmp_path):
    dev = _device()
    with torch.no_grad():
        torch.jit.trace(Ramp().to(dev).eval(), (torch.randn(2, 16, device=dev),)).save(str(tmp_path / "ramp.pt"))
    code, out, err = cli("convert", tmp_path / "ramp.pt", "-o", tmp_path / "ramp.pt2", "-i", "float32[B=1..8,16]")
    assert code == 0 and f"converted on {dev}" in out, out + err
    code, out, err = cli("verify", tmp_path / "ramp.pt", tmp_path / "ramp.pt2")
    assert code == 0 and f"on {dev}" in out, out + err
    code, out, err = cli("convert", tmp_path / "ramp.pt", "-o", tmp_path / "cpu.pt2", "-i", "float32[B=1..8,16]", "--to-device", "cpu")
    assert code == 0 and f"(converted on {dev}, moved to cpu)" in out, out + err
    code, out, err = cli("convert", tmp_path / "ramp.pt", "-o", tmp_path / "x.pt2", "-i", "float32[B=1..8,16]", "--device", "cpu")
    assert code == 2 and f"makes tensors on {dev}" in err


def test_benchmark_reports_peak_device_memory(artifacts, cli):
    code, out, err = cli("verify", artifacts.torchscript("small_cnn"), artifacts.pt2("small_cnn"), "--benchmark", "--runs", "5", "--format", "json")
    assert code == 0, out + err
    (bench,) = json.loads(out)["benchmark"]
    assert bench["old"]["device"] == _device() and bench["new"]["device"] == _device()
    if bench["new"]["peak_bytes"] is None:
        pytest.skip(f"{_device()} reports no memory statistics")
    assert bench["new"]["peak_bytes"] > 0 and bench["old"]["peak_bytes"] > 0


def test_graph_replay_matches(artifacts, cli):
    code, out, err = cli("verify", artifacts.torchscript("small_cnn"), artifacts.pt2("small_cnn"), "--graph")
    assert code == 0, out + err
    assert out.count("old vs new (graph replay)") == 4 and "graph: captured" in out


@pytest.mark.skipif(not hasattr(torch.accelerator, "Graph"), reason="torch.cond in a device graph needs torch >= 2.12")
def test_graph_replay_of_torch_cond(cli, tmp_path):
    from .conftest import load_corpus, save_torchscript

    model, example, _, _ = load_corpus("branchy")
    old = save_torchscript(model, example, "script", tmp_path / "branchy.pt")
    code, out, err = cli("convert", old, "-o", tmp_path / "b.pt2", "-i", "float32[B=2..8,8]")
    assert code == 0, err
    torch.save((torch.full((3, 8), 2.0),), tmp_path / "hot.pt")  # takes the other branch than random inputs
    for extra in ((), ("--inputs", tmp_path / "hot.pt")):
        code, out, err = cli("verify", old, tmp_path / "b.pt2", "--graph", "--benchmark", "--runs", "5", *extra)
        assert code == 0, out + err
        assert "old vs new (graph replay)" in out and "new / old" in out
