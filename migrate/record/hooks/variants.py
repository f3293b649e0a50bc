"""Aggregated inputs as data: how the variants of a method's inputs merge (across calls, processes
and the sites of one artifact), and the example inputs and dynamic shapes they give, as code.

The recorder (in the user's process, to prove an export at exit) and ts2export (``record.merge``,
``record.recording``) read the same JSON with these functions, so a proof exports with exactly
the example and ``dynamic_shapes`` that ``apply --recording`` writes. Standard library only.
"""

from __future__ import annotations

import json
import keyword
import re
from dataclasses import dataclass, field, replace
from typing import Any

from .shard import MAX_CONST_VALUES, MAX_SIZES

MAX_SHAPES = 64  # distinct shapes listed per variant in the recording


# ---- merging aggregated inputs -----------------------------------------------------------------------


def variant_key(v: dict) -> str:
    """Variants merge when structure, dtypes and ranks agree."""
    return json.dumps([v["args"], v["kwargs"], [(t["dtype"], len(t["dims"])) for t in v["tensors"]]], sort_keys=True)


def _meet(a: list, b: list) -> list:
    """The common refinement of two partitions of (tensor, dim): together only if together in both."""
    label_a = {tuple(m): i for i, members in enumerate(a) for m in members}
    label_b = {tuple(m): i for i, members in enumerate(b) for m in members}
    groups: dict[tuple, list] = {}
    for members in a:
        for m in members:
            groups.setdefault((label_a[tuple(m)], label_b.get(tuple(m), tuple(m))), []).append(list(m))
    return list(groups.values())


def _copy(obj: Any) -> Any:
    return json.loads(json.dumps(obj))


def merge_variant(into: dict, v: dict) -> None:
    """Fold variant `v` into `into` (same variant_key)."""
    into["calls"] += v["calls"]
    for ti, (ta, tb) in enumerate(zip(into["tensors"], v["tensors"])):
        for da, db in zip(ta["dims"], tb["dims"]):
            da["min"] = min(da["min"], db["min"])
            da["max"] = max(da["max"], db["max"])
            sizes = sorted(set(da["sizes"]) | set(db["sizes"]))
            da["more_sizes"] = da["more_sizes"] or db["more_sizes"] or len(sizes) > MAX_SIZES
            da["sizes"] = sizes[:MAX_SIZES]
        if tb.get("values") is not None:
            if ta.get("values") is None:
                ta["values"] = list(tb["values"])
            else:
                ta["values"] = [min(ta["values"][0], tb["values"][0]), max(ta["values"][1], tb["values"][1])]
        ta["devices"] = sorted(set(ta["devices"]) | set(tb["devices"]))
    for ca, cb in zip(into["consts"], v["consts"]):
        for value in cb["values"]:
            if value not in ca["values"]:
                if len(ca["values"]) < MAX_CONST_VALUES:
                    ca["values"].append(value)
                else:
                    ca["more_values"] = True
        ca["more_values"] = ca["more_values"] or cb["more_values"]
    into["classes"] = _meet(into["classes"], v["classes"])
    counts: dict[str, int] = {}
    for shape, n in into["shapes"] + v["shapes"]:
        k = json.dumps(shape)
        counts[k] = counts.get(k, 0) + n
    ordered = sorted(counts.items(), key=lambda kv: (-kv[1], kv[0]))
    into["more_shapes"] = into.get("more_shapes", 0) + v.get("more_shapes", 0) + max(0, len(ordered) - MAX_SHAPES)
    into["shapes"] = [[json.loads(k), n] for k, n in ordered[:MAX_SHAPES]]


def merge_method(into: dict, m: dict) -> list[tuple[int, int]]:
    """Fold method stats `m` into `into`; returns (variant index in m, index in into) pairs."""
    for field in ("calls", "trace_examples", "uncached_calls", "dropped_calls"):
        into[field] = into.get(field, 0) + m.get(field, 0)
    if not into.get("arg_names") and m.get("arg_names"):
        into["arg_names"] = list(m["arg_names"])
    index = {variant_key(v): i for i, v in enumerate(into["variants"])}
    mapping = []
    for j, v in enumerate(m["variants"]):
        k = variant_key(v)
        if k in index:
            merge_variant(into["variants"][index[k]], v)
        else:
            index[k] = len(into["variants"])
            into["variants"].append(_copy(v))
            into["variants"][-1]["shapes"] = into["variants"][-1]["shapes"][:MAX_SHAPES]
        mapping.append((j, index[k]))
    return mapping


def empty_method() -> dict:
    return {"arg_names": [], "calls": 0, "trace_examples": 0, "uncached_calls": 0, "dropped_calls": 0, "variants": [], "samples": []}


# ---- the example and the dynamic shapes, as code ------------------------------------------------------


@dataclass(frozen=True)


class DynamicDim:
    """One named dynamic dim: the (input, dim) pairs that always had the same size, and its range.

    ``min`` and ``max`` are the smallest and largest sizes seen. The code writes a wider range, as
    the static path does (``Dim.AUTO(max=max(64, 8 * size))``): no lower bound, and an upper bound of
    at least 64 and 8 times the largest size: a size the run did not show, which TorchScript took,
    must not be refused by the exported program. ``exact``: the range is the one a proof exported
    with (torch.export asked for it, or the wider range failed), written as it is."""

    name: str
    min: int | None  # None: torch's default (a proof found the recorded minimum too narrow for export)
    max: int
    example: int
    members: tuple[tuple[str, int], ...]  # (input path such as "ids" or "batch_0", dim index)
    hint: str | None = None  # "DYNAMIC": no range (a proof found export takes only that), Dim.DYNAMIC
    exact: bool = False

    @property
    def bound(self) -> int:
        """The upper bound the code writes."""
        return self.max if self.exact else max(self.max, WIDER_THAN_SEEN, 8 * self.max)

    def code(self) -> str:
        if self.hint:
            return f"torch.export.Dim.{self.hint}"
        low = "" if self.min is None or not self.exact else f"min={self.min}, "
        return f'torch.export.Dim("{self.name}", {low}max={self.bound})'


#: The least upper bound written for a dim that varied (the static path's DEFAULT_MAX, in
#: ts2export.model.callsites.examples: the hooks import nothing of ts2export).
WIDER_THAN_SEEN = 64


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


def positional_variants(stats: dict) -> dict[int, int]:
    """Put keyword inputs in their positional place (from the argument names) and merge the
    variants that then agree, so `m(x, mask=y)` and `m(x, y)` count as one structure. Returns
    old variant index -> new index."""
    arg_names = list(stats.get("arg_names") or [])
    merged: list[dict] = []
    index: dict[str, int] = {}
    vmap: dict[int, int] = {}
    for i, v in enumerate(stats["variants"]):
        v = _positional(v, arg_names)
        k = variant_key(v)
        if k in index:
            merge_variant(merged[index[k]], v)
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
    by_name = {k: node for k, node in keywords}
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


# ---- the example of a method ------------------------------------------------------------------------


@dataclass(frozen=True)


class Example:
    """The example inputs and dynamic shapes of one method, as code, from its commonest structure."""

    variant: int  # index of the variant (input structure) it stands for
    arg_names: list[str]
    args_code: str | None  # None when the inputs cannot be rebuilt (see notes)
    kwargs_code: str | None
    dims: list[DynamicDim]
    dynamic_shapes_code: str | None  # naming the Dims (defined by the caller from `dims`)
    dynamic_shapes_inline_code: str | None  # with the Dims written inline
    shapes: list[tuple[str, list[int], str]]  # (input path, example shape, dtype) per tensor
    notes: list[str]
    #: (input path, the values seen, whether more were seen) of each bool, number or string input
    #: that took more than one value: an exported program fixes such an input to its example's value
    varied_constants: list[tuple[str, list, bool]] = field(default_factory=list)

    def constants_problem(self, method: str) -> str | None:
        """Why one exported program cannot serve these calls of `method`, or None."""
        if not self.varied_constants:
            return None
        said = "; ".join(f"`{path}` took {', '.join(repr(v) for v in values)}{' and more' if more else ''}"
                         for path, values, more in self.varied_constants[:3])
        return (f"the program called `{method}` with other values of a non-tensor input ({said}), and an exported "
                "program fixes such an input to the value of its example and refuses a call with another value")


def one_program_problem(stats: dict, ex: Example, method: str) -> str | None:
    """Why one exported program cannot serve every call of ``method`` the merged ``stats`` saw
    (``ex``: their example): calls of other input structures or dtypes, or other values of a bool,
    number or string input; None when it can."""
    others = sum(v["calls"] for i, v in enumerate(stats["variants"]) if i != ex.variant) + stats.get("dropped_calls", 0)
    if others:
        # one exported program takes one input structure (the number of items of a list, a string's
        # value, None or a tensor) and one dtype per input: the calls of the others would fail
        return (f"the program called `{method}` with {len(stats['variants']) - 1 or 'other'} other input structure(s) or "
                f"dtype(s) ({others} call(s)) besides the one an export takes, which one exported program would refuse "
                "(a list of another length, a different string, None for a tensor, another dtype)")
    return ex.constants_problem(method)


def example_of(stats: dict, ranges: dict | None = None) -> Example:
    """The example of a method's merged stats (variants already positional, see positional_variants).
    `ranges`: dim name -> [min or None, max], or "dynamic" (Dim.DYNAMIC): what a proof found export
    needs (see .prove)."""
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
    if ranges:
        widened = {d.name: replace(d, hint="DYNAMIC") if ranges[d.name] == "dynamic" else
                   replace(d, min=ranges[d.name][0], max=ranges[d.name][1], exact=True) for d in dims if d.name in ranges}
        dims = [widened.get(d.name, d) for d in dims]
        dim_of = {k: widened.get(d.name, d) for k, d in dim_of.items()}
        notes += [(f"{d.name}: Dim.DYNAMIC (seen {d.example} among sizes up to {d.max}): export refused the named range"
                   if d.hint else f"{d.name}: range {d.min if d.min is not None else 0}..{d.max}, as export asked")
                  + " (proven by the recording)" for d in widened.values()]
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

    varied = [(consts.get(j, f"input{j}"), list(c["values"]), bool(c.get("more_values")))
              for j, c in enumerate(v["consts"]) if len(c["values"]) > 1 or c.get("more_values")]
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
    return Example(best, arg_names, args_code, kwargs_code, dims, named_code, inline_code, shapes, notes, varied)
