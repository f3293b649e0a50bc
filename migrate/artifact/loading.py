"""Loading and saving artifacts, with one-line errors for files that are not what they should be.

Security: `torch.jit.load` can run code embedded in the archive (TorchScript classes, custom ops
registered by the file). Only load files you trust, or use `--isolate`.
"""

from __future__ import annotations

import importlib
import importlib.util
import json
import os
import re
import sys
import zipfile
from pathlib import Path
from typing import Any

import torch

from ts2export.artifact.devices import DeviceNeeds, choose_device, graph_pins, is_present, stored_locations
from ts2export.artifact.errors import ArtifactError, one_line
from ts2export.artifact.fsutil import atomic_path

META_FILE = "ts2export.json"


def _require_file(path: str | os.PathLike[str]) -> Path:
    p = Path(path)
    if not p.exists():
        raise ArtifactError(f"{p}: no such file")
    if not p.is_file():
        raise ArtifactError(f"{p}: not a file")
    return p


def _zip_names(p: Path) -> list[str] | None:
    try:
        with zipfile.ZipFile(p) as zf:
            return zf.namelist()
    except (zipfile.BadZipFile, OSError):
        return None


def artifact_kind(path: str | os.PathLike[str]) -> str:
    """'torchscript', 'pt2' (ExportedProgram archive), 'aoti' (AOTInductor package), 'pte' or
    'unknown', from the file's contents (not its name). Both torch.export archives and AOTInductor
    packages are PT2 archives; a package holds compiled code under data/aotinductor/."""
    p = _require_file(path)
    names = _zip_names(p)
    if names is None:
        with open(p, "rb") as fh:
            head = fh.read(8)
        return "pte" if head[4:6] == b"ET" else "unknown"
    if any("/data/aotinductor/" in n or n.startswith("data/aotinductor/") for n in names):
        return "aoti"
    if any(n.endswith("archive_format") for n in names) or any("/models/" in n and n.endswith(".json") for n in names):
        return "pt2"
    if any("/code/" in n or n.startswith("code/") for n in names):
        return "torchscript"
    return "unknown"


def load_torchscript(path: str | os.PathLike[str], device: torch.device | str = "cpu") -> torch.jit.ScriptModule:
    p = _require_file(path)
    names = _zip_names(p)
    if names is None:
        raise ArtifactError(f"{p}: not a TorchScript archive (not a zip file, or truncated)")
    kind = artifact_kind(p)
    if kind == "aoti":
        raise ArtifactError(f"{p}: this is an AOTInductor package, not TorchScript")
    if kind == "pt2":
        raise ArtifactError(f"{p}: this is a torch.export .pt2 archive, not TorchScript")
    if kind != "torchscript":
        raise ArtifactError(
            f"{p}: not TorchScript (a torch.save checkpoint?); load it in Python and use torch.export.export"
        )
    try:
        return torch.jit.load(str(p), map_location=device)
    except Exception as exc:  # torch raises RuntimeError/ValueError/... for damaged archives
        hint = ""
        if "required keyword attribute" in str(exc):
            hint = (
                " (an artifact frozen or optimized with torch.jit.freeze/optimize_for_inference that this torch "
                "cannot read back; convert the artifact saved before freezing)"
            )
        raise ArtifactError(f"{p}: cannot load TorchScript: {one_line(exc)}{hint}") from None


def open_torchscript(
    path: str | os.PathLike[str], requested: str = "auto", prefer_accelerator: bool = False
) -> tuple[torch.jit.ScriptModule, torch.device, list[str], DeviceNeeds]:
    """Load a TorchScript artifact on the device it should run on (see devices.choose_device):
    (module in eval mode, device, notes, what the artifact names). Loaded once when the storage
    locations already point at the right device, else twice (the graph is read after loading)."""
    stored = stored_locations(_require_file(path))
    first, _ = choose_device(requested, DeviceNeeds(stored, []), prefer_accelerator)
    sm = load_torchscript(path, first)
    needs = DeviceNeeds(stored, graph_pins(sm, script_methods(sm)))
    device, notes = choose_device(requested, needs, prefer_accelerator)
    if device != first:
        sm = load_torchscript(path, device)
    sm.eval()
    return sm, device, notes, needs


def script_methods(sm: torch.jit.ScriptModule) -> list[str]:
    """Methods callable from outside: forward plus @torch.jit.export methods (not private helpers)."""
    names = list(sm._c._method_names())
    out = [n for n in names if not n.startswith("__")]
    return sorted(out, key=lambda n: (n != "forward", n))


# ---- .pt2 -------------------------------------------------------------------------------------------


def detach_state(ep: Any) -> Any:
    """Make every stored tensor a leaf without autograd history (TorchScript loads parameters with
    grad_fn set; such tensors break deepcopy during lowering)."""
    for key, value in list(ep.state_dict.items()):
        if isinstance(value, torch.nn.Parameter):
            ep.state_dict[key] = torch.nn.Parameter(value.detach(), requires_grad=False)
        elif isinstance(value, torch.Tensor):
            ep.state_dict[key] = value.detach()
    for key, value in list(ep.constants.items()):
        if isinstance(value, torch.Tensor):
            ep.constants[key] = value.detach()
    return ep


_EVAL_KEY = re.compile(r"<eval_with_key>\.\d+")


def _drop_tracer_state(ep: Any) -> None:
    """Remove what records the converting process's history rather than the program, so that one
    artifact converted in a fresh or a busy process gives the same .pt2 (same size, same program
    text): the `_torchdynamo_disable*` entries torch's tracer leaves in nodes' `custom` metadata
    (`trace` the first time, `dispatch_trace` later) and the counter of generated-code file names in
    stack traces (`<eval_with_key>.154`). Neither plays a part in running the program."""
    for gm in ep.graph_module.modules():
        if not isinstance(gm, torch.fx.GraphModule):
            continue
        for node in gm.graph.nodes:
            trace = node.meta.get("stack_trace")
            if isinstance(trace, str) and "<eval_with_key>." in trace:
                node.meta["stack_trace"] = _EVAL_KEY.sub("<eval_with_key>", trace)
            custom = node.meta.get("custom")
            if isinstance(custom, dict) and any(k.startswith("_torchdynamo_disable") for k in custom):
                kept = {k: v for k, v in custom.items() if not k.startswith("_torchdynamo_disable")}
                if kept:
                    node.meta["custom"] = kept
                else:
                    del node.meta["custom"]


def save_pt2(path: str | os.PathLike[str], programs: dict[str, Any], meta: dict[str, Any]) -> None:
    from torch.export.pt2_archive._package import package_pt2

    for ep in programs.values():
        _drop_tracer_state(ep)
    # torch.export.load() reads the program called "model": store forward under that name.
    programs = {("model" if name == "forward" else name): ep for name, ep in programs.items()}
    with atomic_path(path) as tmp:
        with open(tmp, "wb") as fh:
            package_pt2(fh, exported_programs=programs, extra_files={META_FILE: json.dumps(meta, indent=1)})


def stored_pt2_devices(path: Path, names: list[str] | None = None) -> list[str]:
    """Devices of the weights and constants of a .pt2, read from its payload configs (torch.export
    loads them straight onto their device, which fails where the device is absent)."""
    found: set[str] = set()
    with zipfile.ZipFile(path) as zf:
        for name in names if names is not None else zf.namelist():
            if not name.endswith(("_weights_config.json", "_constants_config.json")):
                continue
            try:
                config = json.loads(zf.read(name)).get("config", {})
            except (ValueError, AttributeError):
                continue
            for entry in config.values():
                dev = ((entry or {}).get("tensor_meta") or {}).get("device") or {}
                if dev.get("type"):
                    found.add(dev["type"] if dev.get("index") is None else f"{dev['type']}:{dev['index']}")
    return sorted(found)


def load_pt2(path: str | os.PathLike[str]) -> tuple[dict[str, Any], dict[str, Any]]:
    """Return ({method: ExportedProgram}, metadata written by convert or {})."""
    from torch.export.pt2_archive._package import load_pt2 as _load

    p = _require_file(path)
    names = _zip_names(p)
    if names is None:
        raise ArtifactError(f"{p}: not a .pt2 archive (not a zip file, or truncated)")
    kind = artifact_kind(p)
    if kind == "aoti":
        raise ArtifactError(f"{p}: this is an AOTInductor package, not a torch.export program (verify runs both)")
    if kind == "torchscript":
        raise ArtifactError(f"{p}: this is TorchScript, not a .pt2 (convert it first: ts2export convert)")
    missing = [d for d in stored_pt2_devices(p, names) if not is_present(d)]
    if missing:
        raise ArtifactError(
            f"{p}: the program's weights are on {', '.join(missing)}, which this machine does not have; "
            f"load it where that device is, or convert with --to-device cpu"
        )
    try:
        contents = _load(str(p))
    except Exception as exc:
        raise ArtifactError(f"{p}: cannot load .pt2: {one_line(exc)}") from None
    programs = {("forward" if name == "model" else name): ep for name, ep in (contents.exported_programs or {}).items()}
    if not programs:
        raise ArtifactError(f"{p}: the .pt2 archive holds no ExportedProgram")
    meta: dict[str, Any] = {}
    raw = (contents.extra_files or {}).get(META_FILE)
    if raw:
        try:
            meta = json.loads(raw)
        except ValueError:
            meta = {}
    return programs, meta


# ---- reference ------------------------------------------------------------------------------------------


def load_reference(target: str) -> torch.nn.Module:
    """`module:callable` or `path/to/file.py:callable`; the callable returns an nn.Module or a tuple
    whose first item is one (as the corpus builders do)."""
    if ":" not in target:
        raise ArtifactError(f"--reference {target!r}: expected module:callable or file.py:callable")
    mod_name, _, attr = target.rpartition(":")
    try:
        if mod_name.endswith(".py"):
            file = Path(mod_name)
            if not file.is_file():
                raise ArtifactError(f"--reference {target!r}: no such file {file}")
            spec = importlib.util.spec_from_file_location(f"_ts2export_ref_{file.stem}", file)
            module = importlib.util.module_from_spec(spec)
            sys.modules[spec.name] = module
            spec.loader.exec_module(module)
        else:
            if "" not in sys.path and os.getcwd() not in sys.path:
                sys.path.insert(0, os.getcwd())
            module = importlib.import_module(mod_name)
    except ArtifactError:
        raise
    except Exception as exc:
        raise ArtifactError(f"--reference {target!r}: cannot import {mod_name}: {one_line(exc)}") from None
    fn = getattr(module, attr, None)
    if fn is None or not callable(fn):
        raise ArtifactError(f"--reference {target!r}: {mod_name} has no callable {attr}")
    try:
        built = fn()
    except Exception as exc:
        raise ArtifactError(f"--reference {target!r}: building the model failed: {one_line(exc)}") from None
    model = built[0] if isinstance(built, tuple) else built
    if not isinstance(model, torch.nn.Module):
        raise ArtifactError(f"--reference {target!r} returned {type(model).__name__}, expected an nn.Module")
    return model.eval()
