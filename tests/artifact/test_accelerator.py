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
