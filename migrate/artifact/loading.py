"""Loading and saving artifacts, with one-line errors for files that are not what they should be.

Security: `torch.jit.load` can run code embedded in the archive (TorchScript classes, custom ops
registered by the file). Only load files you trust, or use `--isolate`.
"""

from __future__ import annotations

import importlib
import importlib.util
import json
import os
import sys
import zipfile
from pathlib import Path
from typing import Any

import torch

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


def load_torchscript(path: str | os.PathLike[str], device: torch.device | str = "cpu") -> torch.jit.ScriptModule:
    p = _require_file(path)
    names = _zip_names(p)
    if names is None:
        raise ArtifactError(f"{p}: not a TorchScript archive (not a zip file, or truncated)")
    if any(n.endswith("archive_format") for n in names) or any("/models/" in n and n.endswith(".json") for n in names):
        raise ArtifactError(f"{p}: this is a torch.export .pt2 archive, not TorchScript")
    if not any("/code/" in n or n.startswith("code/") for n in names):
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


def save_pt2(path: str | os.PathLike[str], programs: dict[str, Any], meta: dict[str, Any]) -> None:
    from torch.export.pt2_archive._package import package_pt2

    # torch.export.load() reads the program called "model": store forward under that name.
    programs = {("model" if name == "forward" else name): ep for name, ep in programs.items()}
    with atomic_path(path) as tmp:
        with open(tmp, "wb") as fh:
            package_pt2(fh, exported_programs=programs, extra_files={META_FILE: json.dumps(meta, indent=1)})


def load_pt2(path: str | os.PathLike[str]) -> tuple[dict[str, Any], dict[str, Any]]:
    """Return ({method: ExportedProgram}, metadata written by convert or {})."""
    from torch.export.pt2_archive._package import load_pt2 as _load

    p = _require_file(path)
    if _zip_names(p) is None:
        raise ArtifactError(f"{p}: not a .pt2 archive (not a zip file, or truncated)")
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


# ---- inputs file ------------------------------------------------------------------------------------


def load_inputs_file(path: str | os.PathLike[str]) -> tuple[Any, ...]:
    """A torch.save'd tuple/list of tensors (or one tensor). Loaded with weights_only=True."""
    p = _require_file(path)
    try:
        obj = torch.load(str(p), map_location="cpu", weights_only=True)
    except Exception as exc:
        raise ArtifactError(f"{p}: cannot read inputs: {one_line(exc)}") from None
    if isinstance(obj, torch.Tensor):
        return (obj,)
    if isinstance(obj, (tuple, list)) and all(isinstance(t, torch.Tensor) for t in obj):
        return tuple(obj)
    raise ArtifactError(f"{p}: inputs file must hold a tensor or a tuple/list of tensors (torch.save)")


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


# ---- devices ----------------------------------------------------------------------------------------------


def resolve_device(name: str) -> tuple[torch.device, str | None]:
    """`auto` -> the current accelerator or CPU (with a note). Anything else must be present."""
    if name == "auto":
        acc = torch.accelerator.current_accelerator(check_available=True)
        if acc is None:
            return torch.device("cpu"), "no accelerator found; running on cpu"
        return torch.device(acc.type, torch.accelerator.current_device_index()), None
    try:
        dev = torch.device(name)
    except (RuntimeError, ValueError):
        raise ArtifactError(f"unknown device {name!r} (use auto, cpu, cuda[:N], xpu[:N] or mps)") from None
    if dev.type == "cpu":
        return dev, None
    acc = torch.accelerator.current_accelerator(check_available=True)
    if acc is None or acc.type != dev.type:
        have = "cpu" if acc is None else f"cpu, {acc.type}"
        raise ArtifactError(f"device {name!r} is not present on this machine (available: {have})")
    count = torch.accelerator.device_count()
    index = dev.index if dev.index is not None else torch.accelerator.current_device_index()
    if index >= count:
        raise ArtifactError(f"device {name!r} is not present: this machine has {count} {dev.type} device(s)")
    return torch.device(dev.type, index), None
