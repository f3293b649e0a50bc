"""The devices an artifact names (stored weights, device constants pinned in its graph), where
convert and verify run because of them, --to-device, and .pt2 archives made on absent devices.

All on CPU: the absent devices are cuda (a scripted module that makes a tensor on it) and xpu
(an archive whose storages were saved there, crafted by rewriting the storage location)."""

import json
import warnings
import zipfile

import pytest
import torch

from ts2export.artifact.devices import (
    DeviceNeeds,
    choose_device,
    graph_pins,
    move_program,
    program_devices,
    stored_locations,
)
from ts2export.artifact.errors import ArtifactError
from ts2export.artifact.loading import load_pt2

cpu_only = pytest.mark.skipif(
    torch.accelerator.is_available(), reason="needs cuda and xpu to be absent (a CPU-only machine)"
)


class RampOnCuda(torch.nn.Module):
    """Scripted: the graph holds the Device constant "cuda" (a trace on a GPU bakes "cuda:0")."""

    def __init__(self) -> None:
        super().__init__()
        self.lin = torch.nn.Linear(8, 8)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.lin(x) + torch.linspace(0, 1, x.shape[-1], device=torch.device("cuda"))


class RampOnInputDevice(torch.nn.Module):
    """Traced: the trace bakes the input's device (cpu here) into a constant, plus a tensor constant."""

    def __init__(self) -> None:
        super().__init__()
        self.lin = torch.nn.Linear(8, 8)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        ramp = torch.linspace(0, 1, x.shape[-1], device=x.device)
        return self.lin(x) + ramp + torch.tensor([0.5] * 8, device=x.device)


def _save(module, path, trace_with=None):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        ts = torch.jit.trace(module.eval(), trace_with) if trace_with is not None else torch.jit.script(module.eval())
        ts.save(str(path))
    return path


def _relocate(src, dst, old=b"cpu", new=b"xpu"):
    """Copy a TorchScript archive, its storages recorded as saved on `new` (same-length name)."""
    with zipfile.ZipFile(src) as zin, zipfile.ZipFile(dst, "w", zipfile.ZIP_STORED) as zout:
        for item in zin.infolist():
            data = zin.read(item.filename)
            if item.filename.endswith(("data.pkl", "constants.pkl")):
                data = data.replace(b"X\x03\x00\x00\x00" + old, b"X\x03\x00\x00\x00" + new)
            zout.writestr(item, data)
    return dst


@pytest.fixture
def cuda_pinned(tmp_path):
    return _save(RampOnCuda(), tmp_path / "ramp_cuda.pt")


@pytest.fixture
def cpu_traced(tmp_path):
    return _save(RampOnInputDevice(), tmp_path / "ramp_cpu.pt", (torch.randn(2, 8),))


# ---- what an archive names ----------------------------------------------------------------------


def test_stored_locations_are_read_without_loading(cpu_traced, tmp_path):
    assert stored_locations(cpu_traced) == ["cpu"]
    moved = _relocate(cpu_traced, tmp_path / "on_xpu.pt")
    assert stored_locations(moved) == ["xpu"]
    assert stored_locations(tmp_path / "missing.pt") == []


def test_graph_pins_name_the_device_and_the_op(cuda_pinned, cpu_traced):
    sm = torch.jit.load(str(cuda_pinned), map_location="cpu")
    (pin,) = graph_pins(sm, ["forward"])
    assert (pin.device, pin.op, pin.method) == ("cuda", "aten::linspace", "forward")
    needs = DeviceNeeds(stored_locations(cuda_pinned), graph_pins(sm, ["forward"]))
    assert needs.pinned == ["cuda:0"] and needs.pinned_accelerators() == ["cuda:0"]
    sm = torch.jit.load(str(cpu_traced))
    assert {p.device for p in graph_pins(sm, ["forward"])} == {"cpu"}


@cpu_only
def test_choose_device_rules():
    from ts2export.artifact.devices import Pin

    cuda = DeviceNeeds(["cpu"], [Pin("cuda:0", "forward", "aten::linspace")])
    with pytest.raises(ArtifactError, match=r"^the artifact needs cuda:0 \(aten::linspace in forward\): .*available: cpu"):
        choose_device("auto", cuda, prefer_accelerator=False)
    dev, notes = choose_device("cpu", cuda, prefer_accelerator=False)
    assert dev == torch.device("cpu") and "makes tensors on cuda:0" in notes[0]
    with pytest.raises(ArtifactError, match="is not present"):
        choose_device("cuda", cuda, prefer_accelerator=False)
    # weights saved on an absent device are moved by map_location: cpu, with a note
    dev, notes = choose_device("auto", DeviceNeeds(["xpu:0"], []), prefer_accelerator=False)
    assert dev == torch.device("cpu") and notes == ["the artifact's weights were saved on xpu:0, which is not present; loading them on cpu"]
    # nothing named: convert stays on cpu quietly, verify says there is no accelerator
    assert choose_device("auto", DeviceNeeds(["cpu"], []), prefer_accelerator=False) == (torch.device("cpu"), [])
    assert choose_device("auto", DeviceNeeds(["cpu"], []), prefer_accelerator=True)[1] == ["no accelerator found; running on cpu"]


# ---- convert and verify follow the artifact -------------------------------------------------------


@cpu_only
def test_convert_refuses_an_artifact_pinned_to_an_absent_device(cuda_pinned, cli, tmp_path):
    out = tmp_path / "x.pt2"
    code, stdout, err = cli("convert", cuda_pinned, "-o", out, "-i", "float32[2,8]")
    assert code == 2 and not out.exists()
    assert err.strip() == (
        "error: the artifact needs cuda:0 (aten::linspace in forward): its graph makes tensors on that device, which this "
        "machine does not have (available: cpu); run on a machine with cuda, or give --device to try another"
    )
    code, stdout, err = cli("convert", cuda_pinned, "-o", out, "-i", "float32[2,8]", "--device", "cpu")
    assert code == 2 and not out.exists()
    assert err.startswith("error: cannot convert forward on cpu: the artifact's graph makes tensors on cuda:0 (aten::linspace in forward)")
    assert len(err.strip().splitlines()) == 1


@cpu_only
def test_verify_and_migrate_refuse_it_too(cuda_pinned, cpu_traced, cli, tmp_path):
    code, _, err = cli("convert", cpu_traced, "-o", tmp_path / "ok.pt2", "-i", "float32[2,8]")
    assert code == 0, err
    code, _, err = cli("verify", cuda_pinned, tmp_path / "ok.pt2")
    assert code == 2 and err.startswith("error: the artifact needs cuda:0 (aten::linspace in forward)")
    code, _, err = cli("verify", cuda_pinned, tmp_path / "ok.pt2", "--device", "cpu")
    assert code == 2 and "its graph makes tensors on cuda:0 (aten::linspace in forward); run it there with --device" in err
    code, _, err = cli("migrate-artifact", cuda_pinned, "-i", "float32[2,8]", "--out", tmp_path / "run", "--no-lower")
    assert code == 2 and err.startswith("error: convert: the artifact needs cuda:0")
    assert json.loads((tmp_path / "run" / "report.json").read_text())["status"] == "error"


@cpu_only
def test_weights_saved_on_an_absent_device_convert_on_cpu(cpu_traced, cli, tmp_path):
    old = _relocate(_save(torch.nn.Linear(8, 4), tmp_path / "lin.pt", (torch.randn(2, 8),)), tmp_path / "lin_xpu.pt")
    code, out, err = cli("convert", old, "-o", tmp_path / "lin.pt2", "-i", "float32[B=1..4,8]")
    assert code == 0, err
    assert "note: the artifact's weights were saved on xpu:0, which is not present; loading them on cpu" in out
    programs, meta = load_pt2(tmp_path / "lin.pt2")
    assert meta["artifact_devices"] == {"stored": ["xpu"], "pinned": []}
    assert meta["device"] == meta["converted_on"] == "cpu"
    code, out, err = cli("verify", old, tmp_path / "lin.pt2")
    assert code == 0 and "saved on xpu:0" in out, out + err


def test_a_graph_pinned_to_cpu_converts_and_records_it(cpu_traced, cli, tmp_path):
    code, out, err = cli("convert", cpu_traced, "-o", tmp_path / "r.pt2", "-i", "float32[B=1..4,8]")
    assert code == 0, err
    assert out.strip().endswith("(converted on cpu)")
    programs, meta = load_pt2(tmp_path / "r.pt2")
    assert meta["artifact_devices"] == {"stored": ["cpu"], "pinned": ["cpu"]}
    code, out, err = cli("verify", cpu_traced, tmp_path / "r.pt2", "--samples", "2")
    assert code == 0 and "no accelerator found" not in out, out + err


# ---- --to-device and programs on other devices -----------------------------------------------------


@cpu_only
def test_to_device_moves_checks_and_records(cpu_traced, cli, tmp_path):
    out = tmp_path / "r.pt2"
    code, stdout, err = cli("convert", cpu_traced, "-o", out, "-i", "float32[B=1..4,8]", "--to-device", "cuda:1")
    assert code == 2 and err.strip() == "error: --to-device 'cuda:1' is not present on this machine (available: cpu)"
    assert not out.exists()
    code, stdout, err = cli("convert", cpu_traced, "-o", out, "-i", "float32[B=1..4,8]", "--to-device", "cpu")
    assert code == 0, err
    _, meta = load_pt2(out)
    assert meta["device"] == "cpu"


def test_move_program_rewrites_weights_constants_inputs_and_device_arguments():
    class Ramp(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.lin = torch.nn.Linear(8, 8)
            self.register_buffer("scale", torch.full((8,), 2.0))

        def forward(self, x):
            return self.lin(x) * self.scale + torch.linspace(0, 1, 8, device=x.device)

    ep = torch.export.export(Ramp().eval(), (torch.randn(2, 8),))
    assert program_devices(ep) == {"cpu"}
    moved = move_program(ep, "meta")
    assert program_devices(moved) == {"meta"}
    assert all(t.device.type == "meta" for t in torch.utils._pytree.tree_leaves(moved.example_inputs))
    out = moved.module()(torch.empty(2, 8, device="meta"))
    assert out.device.type == "meta" and out.shape == (2, 8)
    assert move_program(moved, "meta") is moved  # nothing to do


@cpu_only
def test_a_pt2_whose_weights_are_on_an_absent_device_is_one_line(cpu_traced, cli, tmp_path):
    good = tmp_path / "r.pt2"
    assert cli("convert", cpu_traced, "-o", good, "-i", "float32[2,8]")[0] == 0
    bad = tmp_path / "r_cuda.pt2"
    with zipfile.ZipFile(good) as zin, zipfile.ZipFile(bad, "w", zipfile.ZIP_STORED) as zout:
        for item in zin.infolist():
            data = zin.read(item.filename)
            if item.filename.endswith("_weights_config.json"):
                data = data.replace(b'"device": {"type": "cpu", "index": null}', b'"device": {"type": "cuda", "index": 0}')
            zout.writestr(item, data)
    for args in (("verify", cpu_traced, bad), ("lower", bad, "-o", tmp_path / "r.pte")):
        code, _, err = cli(*args)
        assert code == 2, err
        assert err.strip() == (
            f"error: {bad}: the program's weights are on cuda:0, which this machine does not have; "
            "load it where that device is, or convert with --to-device cpu"
        )
