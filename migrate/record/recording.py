"""Reading a recording made by `ts2export record`: the inputs a program really gave its TorchScript.

    rec = load_recording("ts2export-recording.json")
    inputs = rec.inputs_at("deploy/export.py", 12, root=repo)   # the call site on line 12
    inputs = rec.inputs_for_artifact("models/m.pt", root=repo)  # every site that saved or loaded it
    inputs.args_code            # "(torch.zeros(8, 7, dtype=torch.long), torch.ones(8, 7))"
    inputs.dim_definitions()    # ['ids_dim0 = torch.export.Dim("ids_dim0", min=1, max=8)', ...]
    inputs.dynamic_shapes_code  # "({0: ids_dim0, 1: ids_dim1}, {0: ids_dim0, 1: ids_dim1})"
    write_verify_inputs(inputs, "inputs.pt")                   # a recorded sample, for verify --inputs

The example code rebuilds tensors of a shape that was seen, with the recorded dtypes; integer
tensors hold a value inside the recorded range (so an embedding index stays valid). A dim that took
several sizes becomes a named `torch.export.Dim` with the smallest and largest size seen; dims that
always had the same size as each other share one Dim (torch.export requires it); every other dim is
static. The standard library only: torch is imported by the helpers that build real objects.
"""

from __future__ import annotations

import json
import os
from dataclasses import dataclass, field
from pathlib import Path, PurePosixPath
from typing import Any

from ts2export.record import merge as record_merge
from ts2export.record.hooks.variants import DynamicDim, example_of, one_program_problem, positional_variants


class RecordingError(Exception):
    """A recording that cannot be read or used; the message is one line for the user."""


@dataclass
class RecordedInputs:
    """What one call site's (or one artifact's) method was called with, ready to write as code."""

    method: str
    sites: tuple[str, ...]
    calls: int
    arg_names: list[str]
    args_code: str | None  # a tuple expression; None when the inputs cannot be rebuilt as code
    kwargs_code: str | None  # a dict expression, or None when there were no keyword inputs
    dims: list[DynamicDim]
    dynamic_shapes_code: str | None  # None when nothing varied (static export)
    dynamic_shapes_inline_code: str | None  # the same with each Dim spelled inline
    shapes: list[tuple[str, list[int], str]]  # (input path, example shape, dtype) per tensor
    notes: list[str] = field(default_factory=list)
    samples: list[dict] = field(default_factory=list)  # {"key", "shapes", ...}
    variant: dict = field(default_factory=dict, repr=False)
    #: why one exported program cannot serve every call the recording saw, or None: the program
    #: called the method with other input structures or dtypes, or with other values of a bool,
    #: number or string input (an export fixes such an input to its example's value)
    problem: str | None = None
    recording: "Recording | None" = field(default=None, repr=False)

    @property
    def varying(self) -> list[tuple[str, int]]:
        """Every (input path, dim) that took more than one size."""
        return [m for d in self.dims for m in d.members]

    def as_dict(self) -> dict:
        """Plain data (JSON-able, picklable): what a rule needs to write the export call."""
        return {
            "method": self.method,
            "sites": list(self.sites),
            "calls": self.calls,
            "arg_names": list(self.arg_names),
            "args_code": self.args_code,
            "kwargs_code": self.kwargs_code,
            "dims": [{"name": d.name, "min": d.min, "max": d.max, "example": d.example, "members": [list(m) for m in d.members]} for d in self.dims],
            "dim_definitions": self.dim_definitions(),
            "dynamic_shapes_code": self.dynamic_shapes_code,
            "dynamic_shapes_inline_code": self.dynamic_shapes_inline_code,
            "shapes": [[p, list(shape), dtype] for p, shape, dtype in self.shapes],
            "notes": list(self.notes),
            "samples": [dict(s) for s in self.samples],
        }

    def dim_definitions(self) -> list[str]:
        """`name = torch.export.Dim("name", min=.., max=..)` lines, one per dynamic dim."""
        return [f"{d.name} = {d.code()}" for d in self.dims]

    def example(self) -> tuple[tuple, dict]:
        """(args, kwargs): the example code evaluated (needs torch)."""
        if self.args_code is None:
            raise RecordingError("the recorded inputs cannot be rebuilt as code: " + "; ".join(self.notes))
        import torch

        scope = {"torch": torch}
        args = eval(self.args_code, scope)  # noqa: S307 - code this module generated
        kwargs = eval(self.kwargs_code, scope) if self.kwargs_code else {}  # noqa: S307
        return args, kwargs

    def dynamic_shapes(self) -> Any:
        """The dynamic_shapes object for torch.export.export (needs torch); None when static."""
        if self.dynamic_shapes_inline_code is None:
            return None
        import torch

        return eval(self.dynamic_shapes_inline_code, {"torch": torch})  # noqa: S307


# ---- the recording -------------------------------------------------------------------------------------


class Recording:
    """A loaded recording: call sites, artifacts, and (lazily) the sample tensors."""

    def __init__(self, data: dict, path: Path) -> None:
        self.data = data
        self.path = path
        self.cwd = Path(data.get("cwd") or path.parent)
        self.sites: list[dict] = data.get("sites", [])
        self.artifacts: list[dict] = data.get("artifacts", [])
        self._by_id = {s["id"]: s for s in self.sites}

    # -- lookups

    def sites_at(self, path: str | os.PathLike[str], line: int, root: str | os.PathLike[str] | None = None) -> list[dict]:
        """The call sites recorded on `line` of `path` (relative to `root`, default the folder the
        recording was made in). A call that spans several lines matches on any of them."""
        return [s for s in self.sites if _same_file(s, path, root, self.cwd) and s["line"] <= line <= s.get("end_line", s["line"])]

    def site(self, path, line: int, root=None) -> dict | None:
        """The one call site at (path, line), or None when there is none or several (different
        objects scripted through one line, e.g. a helper: use sites_at)."""
        found = self.sites_at(path, line, root)
        return found[0] if len(found) == 1 else None

    def inputs_at(self, path, line: int, root=None, method: str = "forward") -> RecordedInputs | None:
        """The recorded inputs of `method` of what the call at (path, line) made or loaded."""
        site = self.site(path, line, root)
        return self.inputs_for_sites([site], method) if site is not None else None

    def inputs_with_artifacts(self, path, line: int, root=None, method: str = "forward") -> RecordedInputs | None:
        """The recorded inputs of what the call at (path, line) made, with the calls of every
        artifact it saved, wherever that file was loaded back and called."""
        site = self.site(path, line, root)
        if site is None:
            return None
        sites = {site["id"]: site}
        for a in self.artifacts:
            if site["id"] in a.get("saved_by", []):
                for i in a.get("loaded_by", []):
                    if i in self._by_id:
                        sites.setdefault(i, self._by_id[i])
        return self.inputs_for_sites(list(sites.values()), method)

    def proof_at(self, path, line: int, root=None) -> dict | None:
        """The verdict of the proof of what the call at (path, line) made (see
        ts2export.record.hooks.prove): {"verdict": "proven" | "failed" | "skipped", ...}; None when
        the call was not recorded or not proven (a load, a recording made with --no-prove)."""
        site = self.site(path, line, root)
        proof = site.get("proof") if site is not None else None
        if proof and proof.get("frame"):
            file, line, function = proof["frame"]
            try:
                file = Path(file).relative_to(self.cwd).as_posix()
            except ValueError:
                pass
            proof = {**proof, "frame": [file, line, function]}
        return proof

    def compiled_at(self, path, line: int, root=None) -> list[tuple[str, str]] | None:
        """What the calls of `torch.jit.script` / `trace` at (path, line) compiled in the recorded run:
        (file, qualname) of each class and function of the program it took in (the module's class and
        its submodules' classes), files relative to the folder the recording was made in where they lie
        in it. None when the run never made that call (or the recording is older than this record)."""
        return self._made_at(path, line, root, "compiled")

    def callers_at(self, path, line: int, root=None) -> list[tuple[str, int]] | None:
        """(file, line) of the calls in the program's code that led to the calls of `torch.jit.script`
        / `trace` at (path, line) in the recorded run (up to 8 frames out; files as compiled_at's).
        None when the run never made that call (or the recording is older than this record)."""
        return self._made_at(path, line, root, "callers")

    def made_at(self, path, line: int, root=None) -> list[dict]:
        """The recorded sites of the calls of `torch.jit.script` / `trace` / `trace_module` at (path,
        line): one per class or function the call made a TorchScript object of."""
        return [s for s in self.sites_at(path, line, root) if s["kind"] in ("script", "trace", "trace_module")]

    def _made_at(self, path, line: int, root, field: str) -> list[tuple] | None:
        """The entries of ``field`` of every script/trace site at (path, line), each once."""
        made = self.made_at(path, line, root)
        if not made or any(field not in s for s in made):
            return None
        out: list[tuple] = []
        for s in made:
            out.extend(entry for entry in map(tuple, s[field]) if entry not in out)
        return out

    def artifact(self, path, root=None) -> dict | None:
        for a in self.artifacts:
            if _same_file(a, path, root, self.cwd):
                return a
        return None

    def inputs_for_artifact(self, path, root=None, method: str = "forward") -> RecordedInputs | None:
        """The recorded inputs of `method` of an artifact, over every site that saved or loaded it."""
        a = self.artifact(path, root)
        if a is None:
            return None
        ids = list(dict.fromkeys(a.get("saved_by", []) + a.get("loaded_by", [])))
        return self.inputs_for_sites([self._by_id[i] for i in ids if i in self._by_id], method)

    def inputs_for_sites(self, sites: list[dict], method: str = "forward") -> RecordedInputs | None:
        stats = record_merge.empty_method()
        samples = []
        for s in sites:
            m = s.get("methods", {}).get(method)
            if m is None:
                continue
            mapping = dict(record_merge.merge_method(stats, m))
            samples += [{**x, "variant": mapping.get(x.get("variant", 0), 0)} for x in m.get("samples", [])]
        if not stats["variants"]:
            return None
        vmap = positional_variants(stats)
        samples = [{**x, "variant": vmap.get(x["variant"], 0)} for x in samples]
        ranges: dict = {}
        for s in sites:  # the dim ranges the proof of an export found it needs
            ranges.update(((s.get("proof") or {}).get("ranges") or {}).get(method) or {})
        ex = example_of(stats, ranges)
        problem = one_program_problem(stats, ex, method)
        return RecordedInputs(
            method=method,
            sites=tuple(s["id"] for s in sites),
            calls=stats["calls"],
            arg_names=ex.arg_names,
            args_code=ex.args_code,
            kwargs_code=ex.kwargs_code,
            dims=ex.dims,
            dynamic_shapes_code=ex.dynamic_shapes_code,
            dynamic_shapes_inline_code=ex.dynamic_shapes_inline_code,
            shapes=ex.shapes,
            notes=ex.notes,
            samples=[x for x in samples if x.get("variant", 0) == ex.variant],
            variant=stats["variants"][ex.variant],
            problem=problem,
            recording=self,
        )

    # -- samples

    @property
    def samples_file(self) -> Path | None:
        name = self.data.get("samples_file")
        return self.path.parent / name if name else None

    def sample(self, key: str) -> tuple[tuple, dict]:
        """(args, kwargs) of one recorded sample (loaded with weights_only=True)."""
        import io
        import zipfile

        side = self.samples_file
        if side is None:
            raise RecordingError(f"{self.path}: the recording holds no samples")
        try:
            with zipfile.ZipFile(side) as zf:
                data = zf.read(key + ".pt")
        except FileNotFoundError:
            raise RecordingError(f"{side}: the recording's samples archive is missing") from None
        except KeyError:
            raise RecordingError(f"{side}: no sample {key!r}") from None
        except (OSError, zipfile.BadZipFile) as exc:
            raise RecordingError(f"{side}: cannot read the samples: {exc}") from None
        import torch

        try:
            args, kwargs = torch.load(io.BytesIO(data), map_location="cpu", weights_only=True)
        except Exception as exc:
            raise RecordingError(f"{side}: sample {key!r} is unreadable: {type(exc).__name__}: {exc}") from None
        return tuple(args), dict(kwargs)


    def replay_kit(self, key: str) -> bytes | None:
        """The bytes of a failed proof's replay kit (see ts2export.record.hooks.replay), or None
        where the archive lacks it."""
        import zipfile

        side = self.samples_file
        if side is None:
            return None
        try:
            with zipfile.ZipFile(side) as zf:
                return zf.read(key)
        except (OSError, KeyError, zipfile.BadZipFile):
            return None


def load_recording(path: str | os.PathLike[str]) -> Recording:
    p = Path(path)
    try:
        data = json.loads(p.read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise RecordingError(f"{p}: no such recording") from None
    except IsADirectoryError:
        raise RecordingError(f"{p}: is a folder, not a recording") from None
    except (OSError, UnicodeDecodeError, ValueError) as exc:
        raise RecordingError(f"{p}: not a readable recording: {exc}") from None
    if not isinstance(data, dict) or data.get("format") != record_merge.FORMAT:
        raise RecordingError(f"{p}: not a ts2export recording (made by `ts2export record`)")
    if data.get("version") != record_merge.VERSION:
        raise RecordingError(f"{p}: recording version {data.get('version')} is not supported (expected {record_merge.VERSION})")
    return Recording(data, p)


def write_verify_inputs(inputs: RecordedInputs, out: str | os.PathLike[str], index: int = 0, generated: bool = False) -> Path:
    """Write recorded sample `index` (or, with `generated`, the example when no sample was kept) as
    a torch.save'd tuple of tensors, the file `ts2export verify --inputs` reads. Keyword inputs are
    put in their positional place (from the method's argument names)."""
    if inputs.samples:
        if not 0 <= index < len(inputs.samples):
            raise RecordingError(f"sample {index} not recorded ({len(inputs.samples)} kept)")
        if inputs.recording is None:
            raise RecordingError("these inputs are not tied to a recording")
        args, kwargs = inputs.recording.sample(inputs.samples[index]["key"])
    elif generated:
        args, kwargs = inputs.example()
    else:
        raise RecordingError("no sample was recorded for these inputs (pass generated=True to use the example)")
    flat = list(args)
    rest = dict(kwargs)
    for name in inputs.arg_names[len(flat):]:
        if name not in rest:
            break
        flat.append(rest.pop(name))
    if rest:
        raise RecordingError(f"keyword inputs {sorted(rest)} have no positional place (argument names unknown)")
    import torch

    if not all(isinstance(t, torch.Tensor) for t in flat):
        raise RecordingError("the recorded inputs are not a flat tuple of tensors (what verify --inputs takes)")
    import io

    from ts2export.textio import atomic_write_bytes

    buf = io.BytesIO()
    torch.save(tuple(flat), buf)
    target = Path(out)
    try:
        atomic_write_bytes(target, buf.getvalue())
    except OSError as exc:
        raise RecordingError(f"{target}: cannot write: {exc.strerror or exc}") from None
    return target


# ---- matching paths --------------------------------------------------------------------------------------


def _same_file(entry: dict, path, root, cwd: Path) -> bool:
    p = Path(path)
    base = Path(root) if root is not None else cwd
    wanted = os.path.normpath(str(p if p.is_absolute() else base / p))
    if os.path.normpath(entry["file"]) == wanted:
        return True
    try:
        if os.path.exists(wanted) and os.path.exists(entry["file"]) and os.path.samefile(entry["file"], wanted):
            return True
    except OSError:
        pass
    # the recording was made in another checkout: compare paths relative to its folder and root
    return not p.is_absolute() and entry.get("path") == PurePosixPath(*p.parts).as_posix()


# ---- building the example and the dynamic shapes ------------------------------------------------------------


_DTYPE_CODE = {"int64": "torch.long", "float32": None, "bool": "torch.bool"}
