""".pt2 (ExportedProgram) -> AOTInductor package (.pt2) for C++ servers, and running one.

`package` compiles every program of a .pt2 with AOTInductor (`torch._inductor.aot_compile` with
`aot_inductor.package`, one model per method: forward as `model`, the others under their names) for
one device, and writes one PT2 archive with `package_pt2`. C++ loads it with
`torch::inductor::AOTIModelPackageLoader(path[, model_name])`; Python with
`torch._inductor.aoti_load_package(path)`.

The package keeps no ExportedProgram, so ts2export stores what `verify` needs next to the compiled
code (extra/ts2export.json): the device, and per method the input specs, value ranges, the input
tree structure and the example inputs.
"""

from __future__ import annotations

import base64
import dataclasses
import io
import json
import time
import zipfile
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import torch
import torch.utils._pytree as pytree

from ts2export.artifact.devices import is_present, move_program, normalize, require_present, resolve_device
from ts2export.artifact.errors import ArtifactError, one_line
from ts2export.artifact.fsutil import atomic_path
from ts2export.artifact.loading import META_FILE, artifact_kind, detach_state, load_pt2
from ts2export.artifact.specs import Signature, parse_specs, signature_from_program

CPP_HINT = "load it in C++ with torch::inductor::AOTIModelPackageLoader (see docs/artifacts.md)"


def model_name(method: str) -> str:
    """AOTInductor's default model name is `model`: forward is stored under it."""
    return "model" if method == "forward" else method


def method_name(model: str) -> str:
    return "forward" if model == "model" else model


@dataclasses.dataclass
class PackagedMethod:
    method: str
    seconds: float
    inputs: list[str]


@dataclasses.dataclass
class PackageReport:
    source: str
    output: str
    device: str
    size_bytes: int
    methods: list[PackagedMethod]

    def to_text(self) -> str:
        lines = [f"{m.method}: compiled with AOTInductor for {self.device} in {m.seconds:.1f} s; inputs {', '.join(m.inputs)}" for m in self.methods]
        lines.append(f"wrote {self.output} ({self.size_bytes / 1024:.1f} KiB); {CPP_HINT}")
        return "\n".join(lines)

    def to_dict(self) -> dict[str, Any]:
        return dataclasses.asdict(self)


def _encode_example(example: Any) -> str | None:
    if example is None:
        return None
    buf = io.BytesIO()
    torch.save(pytree.tree_map(lambda t: t.detach().cpu() if isinstance(t, torch.Tensor) else t, example), buf)
    return base64.b64encode(buf.getvalue()).decode("ascii")


def _decode_example(text: str | None) -> tuple[tuple[Any, ...], dict[str, Any]] | None:
    if not text:
        return None
    try:
        args, kwargs = torch.load(io.BytesIO(base64.b64decode(text)), map_location="cpu", weights_only=True)
    except Exception:
        return None
    return tuple(args), dict(kwargs)


def _describable(sig: Signature) -> list[str] | None:
    """The signature in the --input grammar, when it reads back (derived dims such as 2*s0 do not)."""
    texts = sig.describe()
    try:
        parse_specs(texts)
    except ArtifactError:
        return None
    return texts


def _module_for_compile(ep: Any) -> Any:
    try:
        return ep.module(check_guards=False)
    except TypeError:  # torch without the check_guards argument
        return ep.module()


def package(
    pt2: str, out: str, device: str = "auto", methods: Sequence[str] = ()
) -> PackageReport:
    """Compile the programs of `pt2` with AOTInductor for `device` and write one package."""
    if not str(out).endswith(".pt2"):
        raise ArtifactError(f"{out}: an AOTInductor package must be named *.pt2 (the C++ loader expects it)")
    dev, _ = resolve_device(device)
    programs, meta = load_pt2(pt2)
    wanted = list(methods) or list(programs)
    for m in wanted:
        if m not in programs:
            raise ArtifactError(f"{pt2}: no program {m!r}; it holds: {', '.join(programs)}")
    from torch._inductor import aot_compile
    from torch.export.pt2_archive._package import package_pt2

    files: dict[str, Any] = {}
    info: dict[str, Any] = {}
    reports = []
    for name in wanted:
        ep = move_program(detach_state(programs[name]), dev)
        if ep.example_inputs is None:
            raise ArtifactError(f"{pt2}: program {name} stores no example inputs; AOTInductor needs them (convert it again)")
        recorded = (meta.get("methods") or {}).get(name) or {}
        sig = signature_from_program(ep, recorded.get("value_ranges"), recorded.get("specs"))
        args, kwargs = ep.example_inputs
        t0 = time.perf_counter()
        try:
            compiled = aot_compile(_module_for_compile(ep), tuple(args), dict(kwargs), options={"aot_inductor.package": True})
        except Exception as exc:
            raise ArtifactError(f"cannot compile {name} with AOTInductor for {dev}: {_compile_error(exc)}") from None
        seconds = time.perf_counter() - t0
        files[model_name(name)] = compiled
        info[name] = {
            "inputs": _describable(sig),
            "in_spec": pytree.treespec_dumps(ep.call_spec.in_spec),
            "example": _encode_example(ep.example_inputs),
        }
        reports.append(PackagedMethod(name, seconds, sig.describe()))
    package_meta = {
        "tool": "ts2export package", "source": str(pt2), "device": str(dev), "torch": torch.__version__,
        "converted_from": meta.get("source"), "methods": info,
    }
    try:
        with atomic_path(out) as tmp:
            with open(tmp, "wb") as fh:
                package_pt2(fh, aoti_files=files, extra_files={META_FILE: json.dumps(package_meta, indent=1)})
    except ArtifactError:
        raise
    except Exception as exc:
        raise ArtifactError(f"cannot write the package {out}: {one_line(exc)}") from None
    return PackageReport(str(pt2), str(out), str(dev), Path(out).stat().st_size, reports)


def _compile_error(exc: BaseException) -> str:
    text = str(exc)
    no_compiler = type(exc).__name__ == "InvalidCxxCompiler" or "No working C++ compiler" in text or (
        text.startswith("Compiler: ") and "is not found" in text
    ) or (
        "No such file or directory" in text and any(c in text for c in ("g++", "c++", "clang"))
    )
    if no_compiler:
        return "no C++ compiler found (AOTInductor needs g++ or clang++ on PATH, or CXX set)"
    return one_line(exc)


# ---- reading a package --------------------------------------------------------------------------------


def package_meta(path: str | Path) -> dict[str, Any]:
    """ts2export's metadata in a package ({} for a package made elsewhere), read without loading
    the compiled code."""
    with zipfile.ZipFile(path) as zf:
        for name in zf.namelist():
            if name.endswith(f"/extra/{META_FILE}") or name == f"extra/{META_FILE}":
                try:
                    return json.loads(zf.read(name))
                except ValueError:
                    return {}
    return {}


def package_models(path: str | Path) -> list[str]:
    """Model names in a package (data/aotinductor/<name>/...)."""
    names = set()
    with zipfile.ZipFile(path) as zf:
        for n in zf.namelist():
            parts = n.split("/")
            for i in range(1, len(parts) - 2):  # .../data/aotinductor/<model>/<file>
                if parts[i - 1] == "data" and parts[i] == "aotinductor":
                    names.add(parts[i + 1])
    return sorted(names)


def package_device(path: str | Path, meta: dict[str, Any], models: list[str]) -> torch.device:
    if meta.get("device"):
        return torch.device(meta["device"])
    try:
        found = torch._C._aoti.AOTIModelPackageLoader.load_metadata_from_package(str(path), models[0])
        return torch.device(found.get("AOTI_DEVICE_KEY") or "cpu")
    except Exception as exc:
        raise ArtifactError(f"{path}: cannot read the package's metadata: {one_line(exc)}") from None


class AotiRunner:
    """Runs an AOTInductor package on the device it was compiled for."""

    kind = "aoti"

    def __init__(self, path: str, requested: str = "auto") -> None:
        p = Path(path)
        if artifact_kind(p) != "aoti":
            raise ArtifactError(f"{p}: not an AOTInductor package")
        self.meta = package_meta(p)
        models = package_models(p)
        if not models:
            raise ArtifactError(f"{p}: the package holds no compiled model")
        dev = package_device(p, self.meta, models)
        if not is_present(dev):
            raise ArtifactError(
                f"{p}: the package was compiled for {dev}, which this machine does not have; "
                f"package the .pt2 again here (ts2export package --device ...)"
            )
        self.device = normalize(dev)
        if requested not in ("auto", None):
            asked = require_present(requested)
            if asked.type != self.device.type:
                raise ArtifactError(f"{p}: the package was compiled for {dev.type}; it cannot run on {asked}")
            self.device = asked
        from torch._inductor.package import load_package

        self.models: dict[str, Any] = {}
        for model in models:
            try:
                self.models[method_name(model)] = load_package(
                    str(p), model, device_index=self.device.index if self.device.type != "cpu" else -1
                )
            except Exception as exc:
                raise ArtifactError(f"{p}: cannot load the AOTInductor package: {one_line(exc)}") from None
        self.methods = sorted(self.models, key=lambda n: (n != "forward", n))

    def __call__(self, method: str, args: tuple[Any, ...], kwargs: dict[str, Any]) -> Any:
        return self.models[method](*args, **kwargs)

    def described(self, method: str) -> tuple[Signature | None, Any, Any]:
        """(signature, example (args, kwargs) or None, input TreeSpec or None) stored by `package`."""
        info = (self.meta.get("methods") or {}).get(method) or {}
        sig = None
        if info.get("inputs"):
            try:
                sig = parse_specs(info["inputs"])
            except ArtifactError:
                sig = None
        in_spec = None
        if info.get("in_spec"):
            try:
                in_spec = pytree.treespec_loads(info["in_spec"])
            except Exception:
                in_spec = None
        return sig, _decode_example(info.get("example")), in_spec
