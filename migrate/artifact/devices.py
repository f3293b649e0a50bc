"""Which device an artifact needs, which devices this machine has, and where to run.

A TorchScript archive names devices in two ways:

* **stored**: the storage location of every parameter, buffer and tensor constant (``cuda:0`` for a
  model saved on a GPU). ``torch.jit.load(map_location=...)`` moves these, so they only say where
  the model was saved. They are read from the archive's pickles without loading it.
* **pinned**: ``prim::Constant`` values of type ``Device`` in the graphs, e.g. the ``cuda:0`` that a
  trace bakes into ``torch.linspace(..., device=x.device)``. ``map_location`` does not move these:
  such an artifact runs only where its tensors can meet the pinned device.

``choose_device`` turns a ``--device`` value and these facts into the device to load and run on.
Nothing here is CUDA-specific: devices are found through ``torch.accelerator``.
"""

from __future__ import annotations

import dataclasses
import pickle
import zipfile
from collections.abc import Iterable
from pathlib import Path
from typing import Any

import torch

from ts2export.artifact.errors import ArtifactError

DEVICE_HELP = "auto, cpu, cuda[:N], xpu[:N], mps"
# Devices that never hold real data: a tensor made there is only used for its shape.
_SHAPE_ONLY = {"meta"}


# ---- this machine -------------------------------------------------------------------------------


def available_devices() -> list[str]:
    """'cpu' plus every device of the current accelerator, e.g. ['cpu', 'cuda:0', 'cuda:1']."""
    out = ["cpu"]
    acc = torch.accelerator.current_accelerator(check_available=True)
    if acc is not None:
        out += [f"{acc.type}:{i}" for i in range(torch.accelerator.device_count())]
    return out


def _describe_available() -> str:
    return ", ".join(available_devices())


def parse_device(name: str, what: str = "device") -> torch.device:
    try:
        return torch.device(name)
    except (RuntimeError, ValueError):
        raise ArtifactError(f"unknown {what} {name!r} (use {DEVICE_HELP})") from None


def normalize(dev: torch.device | str) -> torch.device:
    """An accelerator device without an index gets the current index; cpu stays cpu."""
    dev = torch.device(dev)
    if dev.type == "cpu" or dev.index is not None:
        return dev
    acc = torch.accelerator.current_accelerator(check_available=True)
    if acc is not None and acc.type == dev.type:
        return torch.device(dev.type, torch.accelerator.current_device_index())
    return torch.device(dev.type, 0)


def is_present(dev: torch.device | str) -> bool:
    dev = torch.device(dev)
    if dev.type == "cpu":
        return True
    acc = torch.accelerator.current_accelerator(check_available=True)
    if acc is None or acc.type != dev.type:
        return False
    return (dev.index or 0) < torch.accelerator.device_count()


def resolve_device(name: str) -> tuple[torch.device, str | None]:
    """`auto` -> the current accelerator or CPU (with a note). Anything else must be present."""
    if name == "auto":
        acc = torch.accelerator.current_accelerator(check_available=True)
        if acc is None:
            return torch.device("cpu"), "no accelerator found; running on cpu"
        return torch.device(acc.type, torch.accelerator.current_device_index()), None
    return require_present(name), None


def require_present(name: str, what: str = "device") -> torch.device:
    dev = parse_device(name, what)
    if dev.type == "cpu":
        return torch.device("cpu")
    acc = torch.accelerator.current_accelerator(check_available=True)
    if acc is None or acc.type != dev.type:
        raise ArtifactError(f"{what} {name!r} is not present on this machine (available: {_describe_available()})")
    count = torch.accelerator.device_count()
    index = dev.index if dev.index is not None else torch.accelerator.current_device_index()
    if index >= count:
        raise ArtifactError(f"{what} {name!r} is not present: this machine has {count} {dev.type} device(s)")
    return torch.device(dev.type, index)


# ---- what a TorchScript archive names ----------------------------------------------------------------


class _Stub:
    """Stands in for every class a pickle names: nothing is imported and no code runs."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        pass

    def __setstate__(self, state: Any) -> None:
        pass


class _LocationScanner(pickle.Unpickler):
    def __init__(self, data: bytes) -> None:
        import io

        super().__init__(io.BytesIO(data))
        self.locations: list[str] = []

    def find_class(self, module: str, name: str) -> Any:
        return _Stub

    def persistent_load(self, pid: Any) -> Any:
        # TorchScript storages: ('storage', storage_type, key, location, numel)
        if isinstance(pid, tuple) and len(pid) >= 4 and pid[0] == "storage" and isinstance(pid[3], str):
            self.locations.append(pid[3])
        return _Stub()


def stored_locations(path: str | Path) -> list[str]:
    """Storage locations of the parameters, buffers and tensor constants of a TorchScript archive,
    read from its pickles without loading it (no code runs). Sorted, without duplicates."""
    found: set[str] = set()
    try:
        with zipfile.ZipFile(path) as zf:
            for name in zf.namelist():
                if name.endswith(("/data.pkl", "/constants.pkl")) or name in ("data.pkl", "constants.pkl"):
                    scanner = _LocationScanner(zf.read(name))
                    try:
                        scanner.load()
                    except Exception:  # an unusual pickle: keep what was found before it
                        pass
                    found.update(scanner.locations)
    except (zipfile.BadZipFile, OSError):
        return []
    return sorted(found)


@dataclasses.dataclass
class Pin:
    device: str  # as written in the graph: "cuda:0", "cuda", "cpu"
    method: str
    op: str  # the first op that uses it, e.g. "aten::linspace"


def graph_pins(sm: torch.jit.ScriptModule, methods: Iterable[str]) -> list[Pin]:
    """Device constants in the (inlined) graphs of `methods`, one Pin per device and method."""
    pins: list[Pin] = []
    for method in methods:
        try:
            graph = getattr(sm, method).inlined_graph
        except (AttributeError, RuntimeError):
            continue
        seen: set[str] = set()
        for node in graph.findAllNodes("prim::Constant", True):
            out = node.output()
            if out.type().kind() != "DeviceObjType":
                continue
            dev = str(out.toIValue())
            if dev in seen or torch.device(dev).type in _SHAPE_ONLY:
                continue
            seen.add(dev)
            users = [u.user.kind() for u in out.uses()]
            pins.append(Pin(dev, method, users[0] if users else "unused"))
    return pins


@dataclasses.dataclass
class DeviceNeeds:
    """What a TorchScript artifact names: storage locations and graph-pinned devices."""

    stored: list[str]
    pins: list[Pin]

    @property
    def pinned(self) -> list[str]:
        return sorted({str(normalize(p.device)) for p in self.pins})

    def pinned_accelerators(self) -> list[str]:
        return [d for d in self.pinned if torch.device(d).type != "cpu"]

    def stored_accelerators(self) -> list[str]:
        out = set()
        for loc in self.stored:
            try:
                dev = torch.device(loc)
            except (RuntimeError, ValueError):
                continue
            if dev.type not in ("cpu", *_SHAPE_ONLY):
                out.add(str(normalize(dev)))
        return sorted(out)

    def pin_text(self, device: str) -> str:
        """`cuda:0 (aten::linspace in forward)`."""
        for p in self.pins:
            if str(normalize(p.device)) == device:
                return f"{device} ({p.op} in {p.method})"
        return device

    def to_dict(self) -> dict[str, Any]:
        return {"stored": self.stored, "pinned": self.pinned}


def choose_device(requested: str, needs: DeviceNeeds, prefer_accelerator: bool) -> tuple[torch.device, list[str]]:
    """The device to load and run a TorchScript artifact on, and notes about the choice.

    `auto`: a device pinned in the graph (an accelerator one before cpu) must be used, and must be
    present; else the accelerator the weights were saved on, when present; else (for `verify`,
    `prefer_accelerator`) the current accelerator; else cpu. A named device must be present; when
    the graph pins another device the run goes ahead with a note (the pin may be harmless, e.g. a
    final `.to("cpu")`), and a failure then names the pin.
    """
    notes: list[str] = []
    pinned_acc = needs.pinned_accelerators()
    if requested != "auto":
        dev = require_present(requested)
        others = [d for d in needs.pinned if d != str(dev)]
        if others and (pinned_acc or dev.type != "cpu"):
            notes.append(
                f"the artifact's graph makes tensors on {', '.join(needs.pin_text(d) for d in others)}; "
                f"running it on {dev} as asked"
            )
        return dev, notes
    if pinned_acc:
        missing = [d for d in pinned_acc if not is_present(d)]
        if missing:
            raise ArtifactError(
                f"the artifact needs {needs.pin_text(missing[0])}: its graph makes tensors on that device, which "
                f"this machine does not have (available: {_describe_available()}); run on a machine with "
                f"{torch.device(missing[0]).type}, or give --device to try another"
            )
        if len(pinned_acc) > 1:
            notes.append(f"the artifact's graph names several devices: {', '.join(pinned_acc)}; running on {pinned_acc[0]}")
        dev = torch.device(pinned_acc[0])
        notes.append(f"running on {needs.pin_text(pinned_acc[0])}: the artifact's graph makes tensors there")
        return dev, notes
    if needs.pinned:  # pinned to cpu only
        acc = torch.accelerator.current_accelerator(check_available=True)
        if prefer_accelerator and acc is not None:
            notes.append(f"running on cpu: the artifact's graph makes tensors on {needs.pin_text('cpu')}")
        return torch.device("cpu"), notes
    stored_acc = needs.stored_accelerators()
    present = [d for d in stored_acc if is_present(d)]
    if present:
        return torch.device(present[0]), notes
    dev, note = resolve_device("auto") if prefer_accelerator else (torch.device("cpu"), None)
    if stored_acc:
        notes.append(f"the artifact's weights were saved on {', '.join(stored_acc)}, which is not present; loading them on {dev}")
    elif note:
        notes.append(note)
    return dev, notes


# ---- what an ExportedProgram names ----------------------------------------------------------------


def program_devices(ep: Any) -> set[str]:
    """Devices of a program's weights, constants and device arguments in its graphs."""
    found: set[str] = set()
    for value in list(ep.state_dict.values()) + list(ep.constants.values()):
        if isinstance(value, torch.Tensor):
            found.add(str(value.device))
    for gm in ep.graph_module.modules():
        if not isinstance(gm, torch.fx.GraphModule):
            continue
        for node in gm.graph.nodes:
            dev = node.kwargs.get("device") if node.op == "call_function" else None
            if dev is None and node.op == "call_function" and node.target is torch.ops.aten.to.device:
                dev = node.args[1] if len(node.args) > 1 else None
            if isinstance(dev, (str, torch.device)):
                found.add(str(torch.device(dev)))
    return found


def move_program(ep: Any, device: torch.device | str) -> Any:
    """The program with every weight, constant, example input and device argument on `device`
    (torch.export.passes.move_to_device_pass, which changes `ep` in place)."""
    from torch.export.passes import move_to_device_pass

    device = torch.device(device)
    if program_devices(ep) <= {str(device)}:
        return ep
    return move_to_device_pass(ep, device)
