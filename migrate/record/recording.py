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
import keyword
import os
import re
from dataclasses import dataclass, field
from pathlib import Path, PurePosixPath
from typing import Any

from ts2export.record import merge as record_merge


class RecordingError(Exception):
    """A recording that cannot be read or used; the message is one line for the user."""


@dataclass(frozen=True)
class DynamicDim:
    """One named dynamic dim: the (input, dim) pairs that always had the same size, and its range."""

    name: str
    min: int
    max: int
    example: int
    members: tuple[tuple[str, int], ...]  # (input path such as "ids" or "batch_0", dim index)

    def code(self) -> str:
        return f'torch.export.Dim("{self.name}", min={self.min}, max={self.max})'


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
        vmap = _positional_variants(stats)
        samples = [{**x, "variant": vmap.get(x["variant"], 0)} for x in samples]
        return _inputs(stats, samples, method, tuple(s["id"] for s in sites), self)

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


def _identifier(text: str) -> str:
    name = re.sub(r"\W+", "_", text).strip("_") or "x"
    if name[0].isdigit():
        name = "x" + name
    return name + "_" if keyword.iskeyword(name) else name


class _Unreproducible(Exception):
    pass


def _leaf_paths(tree: dict, prefix: str, out: dict[int, str], consts: dict[int, str]) -> None:
    if "tensor" in tree:
        out[tree["tensor"]] = prefix
    elif "const" in tree:
        consts[tree["const"]] = prefix
    elif "tuple" in tree or "list" in tree:
        for i, node in enumerate(tree.get("tuple", tree.get("list", []))):
            _leaf_paths(node, f"{prefix}_{i}", out, consts)
    elif "dict" in tree:
        for k, node in tree["dict"]:
            _leaf_paths(node, f"{prefix}_{k}", out, consts)
    elif "namedtuple" in tree:
        for fname, node in zip(tree.get("fields", []), tree["items"]):
            _leaf_paths(node, f"{prefix}_{fname}", out, consts)


def _positional_variants(stats: dict) -> dict[int, int]:
    """Put keyword inputs in their positional place (from the argument names) and merge the
    variants that then agree, so `m(x, mask=y)` and `m(x, y)` count as one structure. Returns
    old variant index -> new index."""
    arg_names = list(stats.get("arg_names") or [])
    merged: list[dict] = []
    index: dict[str, int] = {}
    vmap: dict[int, int] = {}
    for i, v in enumerate(stats["variants"]):
        v = _positional(v, arg_names)
        k = record_merge.variant_key(v)
        if k in index:
            record_merge.merge_variant(merged[index[k]], v)
        else:
            index[k] = len(merged)
            merged.append(json.loads(json.dumps(v)))
        vmap[i] = index[k]
    stats["variants"] = merged
    return vmap


def _positional(v: dict, arg_names: list[str]) -> dict:
    positional, keywords = v["args"]["tuple"], v["kwargs"]["dict"]
    if not keywords:
        return v
    wanted = arg_names[len(positional):len(positional) + len(keywords)]
    by_name = dict((k, node) for k, node in keywords)
    if len(wanted) != len(keywords) or set(wanted) != set(by_name):
        return v
    tree = {"tuple": positional + [by_name[name] for name in wanted]}
    tensors: list[int] = []
    consts: list[int] = []

    def renumber(node: dict) -> dict:
        if "tensor" in node:
            tensors.append(node["tensor"])
            return {"tensor": len(tensors) - 1}
        if "const" in node:
            consts.append(node["const"])
            return {**node, "const": len(consts) - 1}
        for kind in ("tuple", "list"):
            if kind in node:
                return {kind: [renumber(x) for x in node[kind]]}
        if "dict" in node:
            return {"dict": [[k, renumber(x)] for k, x in node["dict"]]}
        if "namedtuple" in node:
            return {**node, "items": [renumber(x) for x in node["items"]]}
        return node

    args = renumber(tree)
    new_of = {old: new for new, old in enumerate(tensors)}
    return {
        **v,
        "args": args,
        "kwargs": {"dict": []},
        "tensors": [v["tensors"][old] for old in tensors],
        "consts": [v["consts"][old] for old in consts],
        "classes": [[[new_of[t], d] for t, d in members] for members in v["classes"]],
        "shapes": [[[shape[old] for old in tensors], n] for shape, n in v["shapes"]],
    }


def _inputs(stats: dict, samples: list[dict], method: str, site_ids: tuple[str, ...], recording: Recording) -> RecordedInputs:
    variants = stats["variants"]
    best = max(range(len(variants)), key=lambda i: variants[i]["calls"])
    v = variants[best]
    notes: list[str] = []
    others = sum(x["calls"] for i, x in enumerate(variants) if i != best)
    if others:
        notes.append(f"{len(variants) - 1} other input structure(s) or dtype(s) seen in {others} call(s) were left out")
    if stats.get("dropped_calls"):
        notes.append(f"{stats['dropped_calls']} call(s) with yet other structures were not analysed")
    arg_names = list(stats.get("arg_names") or [])
    positional = v["args"]["tuple"]
    names = [_identifier(arg_names[i]) if i < len(arg_names) else f"arg{i}" for i in range(len(positional))]
    paths: dict[int, str] = {}
    consts: dict[int, str] = {}
    for name, node in zip(names, positional):
        _leaf_paths(node, name, paths, consts)
    for k, node in v["kwargs"]["dict"]:
        _leaf_paths(node, _identifier(str(k)), paths, consts)

    tensors = v["tensors"]
    dims, sizes, dim_of = _dynamic_dims(v, paths, notes)
    shapes = []
    for i, t in enumerate(tensors):
        shape = [sizes.get((i, d), dim["min"]) for d, dim in enumerate(t["dims"])]
        shapes.append((paths.get(i, f"tensor{i}"), shape, t["dtype"]))

    def tensor_code(i: int) -> str:
        return _tensor_code(tensors[i], shapes[i][1])

    def const_code(j: int) -> str:
        c = v["consts"][j]
        if not c["values"]:
            raise _Unreproducible(f"a {c['type']} input was not kept")
        if len(c["values"]) > 1 or c.get("more_values"):
            notes.append(f"input {consts.get(j, j)} took {len(c['values'])}{'+' if c.get('more_values') else ''} values; the example uses {c['values'][0]!r}")
        return repr(c["values"][0])

    try:
        args_code = _code(v["args"], tensor_code, const_code)
        kwargs_code = _code(v["kwargs"], tensor_code, const_code) if v["kwargs"]["dict"] else None
    except _Unreproducible as exc:
        args_code = kwargs_code = None
        notes.append(str(exc))

    named_code = inline_code = None
    if dims:
        by_tensor: dict[int, dict[int, DynamicDim]] = {}
        for (i, d), dd in dim_of.items():
            by_tensor.setdefault(i, {})[d] = dd
        named_code = _spec_code(v, arg_names, by_tensor, inline=False, notes=notes)
        inline_code = _spec_code(v, arg_names, by_tensor, inline=True, notes=None)
    return RecordedInputs(
        method=method,
        sites=site_ids,
        calls=stats["calls"],
        arg_names=arg_names,
        args_code=args_code,
        kwargs_code=kwargs_code,
        dims=dims,
        dynamic_shapes_code=named_code,
        dynamic_shapes_inline_code=inline_code,
        shapes=shapes,
        notes=notes,
        samples=[s for s in samples if s.get("variant", 0) == best],
        variant=v,
        recording=recording,
    )


def _dynamic_dims(v: dict, paths: dict[int, str], notes: list[str]):
    """(dims, example size per varying (tensor, dim), Dim per (tensor, dim)): the dims that varied,
    grouped by "always the same size", with an example size for each.

    The example sizes come from the most common shape seen in which every dynamic dim is at least 2
    and no two groups share a size (torch.export specializes sizes 0 and 1 and would tie equal
    sizes); failing that, from each dim's own sizes."""
    tensors = v["tensors"]
    groups = []
    for members in v.get("classes", []):
        ti, d = members[0]
        dim = tensors[ti]["dims"][d]
        if dim["min"] == dim["max"]:
            continue
        if dim["max"] < 2:
            path = paths.get(ti, f"tensor{ti}")
            notes.append(f"dim {d} of {path} took only sizes {dim['sizes']}; left static at {dim['max']}")
            continue
        groups.append([tuple(m) for m in members])
    if not groups:
        return [], {(ti, d): dim["max"] for ti, t in enumerate(tensors) for d, dim in enumerate(t["dims"]) if dim["min"] != dim["max"]}, {}
    chosen: list[int] | None = None
    for shape, _count in v.get("shapes", []):
        picks = [shape[g[0][0]][g[0][1]] for g in groups]
        if all(p >= 2 for p in picks) and len(set(picks)) == len(picks):
            chosen = picks
            break
    if chosen is None:
        chosen = []
        for g in groups:
            dim = tensors[g[0][0]]["dims"][g[0][1]]
            options = [s for s in sorted(dim["sizes"], reverse=True) if s >= 2] or [dim["max"]]
            free = [s for s in options if s not in chosen]
            chosen.append(free[0] if free else options[0])
    dims = []
    used: set[str] = set()
    sizes: dict[tuple[int, int], int] = {}
    dim_of: dict[tuple[int, int], DynamicDim] = {}
    for g, example in zip(groups, chosen):
        ti, d = g[0]
        dim = tensors[ti]["dims"][d]
        name = base = _identifier(f"{paths.get(ti, f'tensor{ti}')}_dim{d}")
        n = 2
        while name in used:
            name = f"{base}_{n}"
            n += 1
        used.add(name)
        members = tuple((paths.get(t, f"tensor{t}"), dd) for t, dd in g)
        dims.append(DynamicDim(name, int(dim["min"]), int(dim["max"]), int(example), members))
        for m in g:
            sizes[m] = example
            dim_of[m] = dims[-1]
        if dim.get("more_sizes"):
            notes.append(f"{name}: more than {len(dim['sizes'])} sizes seen; range {dim['min']}..{dim['max']}")
    for ti, t in enumerate(tensors):  # dims left static though they varied (sizes 0 and 1 only)
        for d, dim in enumerate(t["dims"]):
            if dim["min"] != dim["max"] and (ti, d) not in sizes:
                sizes[(ti, d)] = dim["max"]
    return dims, sizes, dim_of


def _tensor_code(t: dict, shape: list[int]) -> str:
    dtype = t["dtype"]
    size = ", ".join(str(s) for s in shape) if shape else "()"
    extra = []
    values = t.get("values")
    fn = "ones"  # floats, and bools (an all-true mask)
    if dtype.startswith(("int", "uint")):
        fn = "zeros"
        if values is not None:
            lo, hi = values
            if not lo <= 0 <= hi:
                fn = "ones" if lo <= 1 <= hi else "full"
    dtype_code = _DTYPE_CODE.get(dtype, f"torch.{dtype}")
    if dtype_code:
        extra.append(f"dtype={dtype_code}")
    devices = t.get("devices") or []
    if len(devices) == 1 and devices[0] != "cpu":
        extra.append(f'device="{devices[0]}"')
    tail = "".join(", " + e for e in extra)
    if fn == "full":
        dims = "()" if not shape else f"({size},)" if len(shape) == 1 else f"({size})"
        return f"torch.full({dims}, {values[0]}{tail})"
    return f"torch.{fn}({size}{tail})"


def _code(tree: dict, tensor_code, const_code) -> str:
    if "tensor" in tree:
        return tensor_code(tree["tensor"])
    if "const" in tree:
        return const_code(tree["const"])
    if "tuple" in tree:
        items = [_code(x, tensor_code, const_code) for x in tree["tuple"]]
        return "(" + ", ".join(items) + ("," if len(items) == 1 else "") + ")"
    if "list" in tree:
        return "[" + ", ".join(_code(x, tensor_code, const_code) for x in tree["list"]) + "]"
    if "dict" in tree:
        return "{" + ", ".join(f"{k!r}: {_code(x, tensor_code, const_code)}" for k, x in tree["dict"]) + "}"
    if "namedtuple" in tree:
        raise _Unreproducible(f"an input is a {tree['namedtuple']} (a NamedTuple); write its example by hand")
    raise _Unreproducible(f"an input is a {tree.get('other', 'Python object')}, which a recording cannot rebuild")


def _spec_code(v: dict, arg_names: list[str], by_tensor: dict, inline: bool, notes) -> str:
    def dim(d: DynamicDim) -> str:
        return d.code() if inline else d.name

    def spec(tree: dict) -> str:
        if "tensor" in tree:
            entries = by_tensor.get(tree["tensor"]) or {}
            return "{" + ", ".join(f"{k}: {dim(d)}" for k, d in sorted(entries.items())) + "}" if entries else "None"
        if "tuple" in tree:
            items = [spec(x) for x in tree["tuple"]]
            return "(" + ", ".join(items) + ("," if len(items) == 1 else "") + ")"
        if "list" in tree:
            return "[" + ", ".join(spec(x) for x in tree["list"]) + "]"
        if "dict" in tree:
            return "{" + ", ".join(f"{k!r}: {spec(x)}" for k, x in tree["dict"]) + "}"
        if "namedtuple" in tree:
            return "(" + ", ".join(spec(x) for x in tree["items"]) + ("," if len(tree["items"]) == 1 else "") + ")"
        return "None"

    positional = v["args"]["tuple"]
    keywords = v["kwargs"]["dict"]
    if not keywords:
        return spec(v["args"])
    if len(arg_names) >= len(positional):
        entries = [f"{arg_names[i]!r}: {spec(node)}" for i, node in enumerate(positional)]
        entries += [f"{k!r}: {spec(node)}" for k, node in keywords]
        return "{" + ", ".join(entries) + "}"
    if notes is not None:
        notes.append("argument names unknown: dynamic_shapes lists keyword inputs after the positional ones")
    items = [spec(node) for node in positional] + [spec(node) for _, node in keywords]
    return "(" + ", ".join(items) + ("," if len(items) == 1 else "") + ")"
