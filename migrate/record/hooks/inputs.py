"""What the recorder keeps of the calls of a recorded method: a cheap signature of each call's inputs
(the cache key of its analysis), and per method the variants of its inputs (pytree structure,
dtypes, per dim the min, max and sizes seen, which varying dims were always equal, integer value
ranges, constants) and a few small real samples. Standard library only; torch is the program's
own, handed over by :func:`bind` when the program imports it.
"""

from __future__ import annotations

import os

from . import shard
from .shard import (
    _INTEGER_DTYPES, MAX_CONST_VALUES, MAX_PROCESS_SAMPLE_BYTES, MAX_SAMPLE_BYTES, MAX_SHAPE_KEYS, MAX_SIZES,
    MAX_VARIANTS, VALUE_RANGE_EVERY, VALUE_RANGE_FIRST,
)

_torch = None
_Tensor = None


def bind(torch) -> None:
    """The program's torch (its Tensor class is what a call's inputs are checked against)."""
    global _torch, _Tensor
    _torch = torch
    _Tensor = torch.Tensor


def _call_key(args, kwargs):
    """A cheap hashable signature of a call's inputs (the cache key of its analysis). One or two
    tensors give a flat (dtype, shape, ...) tuple; anything else a tuple of per-input keys, which
    never equals a flat one (its items are tuples, never dtypes)."""
    T = _Tensor
    if not kwargs:
        n = len(args)
        if n == 2 and type(args[0]) is T and type(args[1]) is T:
            a, b = args
            return (a.dtype, a.shape, b.dtype, b.shape)
        if n == 1 and type(args[0]) is T:
            a = args[0]
            return (a.dtype, a.shape)
        return tuple([_key(a) for a in args])
    return (tuple([_key(a) for a in args]), tuple([(k, _key(v)) for k, v in kwargs.items()]))


def _key(o):
    """A cheap hashable signature of one input: shapes and dtypes of tensors, values of constants."""
    if isinstance(o, _Tensor):
        return (o.dtype, o.shape)
    t = type(o)
    if t is tuple or t is list:
        return (t, tuple([_key(x) for x in o]))
    if t is dict:
        return (t, tuple([(k, _key(v)) for k, v in o.items()]))
    if o is None or t is bool or t is int or t is float or t is str:
        return (t, o)
    if isinstance(o, tuple) and hasattr(t, "_fields"):
        return (t, tuple([_key(x) for x in o]))
    return (t,)


def _flatten(o, tensors: list, consts: list):
    """The structure of one input as a hashable tree; tensors and constants are appended in order."""
    if isinstance(o, _Tensor):
        tensors.append(o)
        return ("T",)
    t = type(o)
    if t is tuple or t is list:
        return (t.__name__, tuple(_flatten(x, tensors, consts) for x in o))
    if t is dict and all(type(k) in (str, int) for k in o):
        return ("dict", tuple((k, _flatten(v, tensors, consts)) for k, v in o.items()))
    if isinstance(o, tuple) and hasattr(t, "_fields"):
        return ("namedtuple", f"{t.__module__}.{t.__qualname__}", tuple(t._fields), tuple(_flatten(x, tensors, consts) for x in o))
    if o is None or t in (bool, int, float, str):
        consts.append(o)
        return ("C", t.__name__ if o is not None else "None")
    return ("O", f"{t.__module__}.{t.__qualname__}")


def _plain(node) -> bool:
    """True when the structure holds only tensors, constants, tuples, lists and dicts (savable)."""
    kind = node[0]
    if kind in ("T", "C"):
        return True
    if kind in ("tuple", "list"):
        return all(_plain(x) for x in node[1])
    if kind == "dict":
        return all(_plain(v) for _, v in node[1])
    return False


def _tree_json(node):
    kind = node[0]
    if kind == "T":
        return {"tensor": None}
    if kind in ("tuple", "list"):
        return {kind: [_tree_json(x) for x in node[1]]}
    if kind == "dict":
        return {"dict": [[k, _tree_json(v)] for k, v in node[1]]}
    if kind == "namedtuple":
        return {"namedtuple": node[1], "fields": list(node[2]), "items": [_tree_json(x) for x in node[3]]}
    if kind == "C":
        return {"const": node[1]}
    return {"other": node[1]}


def _numbered(tree, counters):
    """JSON tree with tensor and constant leaves numbered in flatten order."""
    if "tensor" in tree:
        counters[0] += 1
        return {"tensor": counters[0] - 1}
    if "const" in tree:
        counters[1] += 1
        return {"const": counters[1] - 1, "type": tree["const"]}
    for kind in ("tuple", "list"):
        if kind in tree:
            return {kind: [_numbered(x, counters) for x in tree[kind]]}
    if "dict" in tree:
        return {"dict": [[k, _numbered(v, counters)] for k, v in tree["dict"]]}
    if "namedtuple" in tree:
        return {**tree, "items": [_numbered(x, counters) for x in tree["items"]]}
    return tree


def _dtype_name(dtype) -> str:
    return str(dtype).replace("torch.", "")


def _value_ranges(tensors, int_leaves) -> list:
    out = []
    for i in int_leaves:
        t = tensors[i]
        if t.numel() == 0 or t.is_meta or (type(t) is not _Tensor and not isinstance(t, _torch.nn.Parameter)):
            continue
        try:
            lo, hi = _torch.aminmax(t.detach())
        except RuntimeError:  # a dtype without aminmax: no range
            continue
        out.append((i, int(lo), int(hi)))
    return out


def _clone(o):
    if isinstance(o, _Tensor):
        return o.detach().to("cpu", copy=True)
    t = type(o)
    if t is tuple or t is list:
        return t(_clone(x) for x in o)
    if t is dict:
        return {k: _clone(v) for k, v in o.items()}
    return o


class _Shape:
    """One cached input signature of a method: its variant, its shapes and how often it was seen."""

    __slots__ = ("count", "variant", "value_calls", "dims")

    def __init__(self, variant, dims) -> None:
        self.count = 0
        self.variant = variant
        self.value_calls = 0
        self.dims = dims


class _Pending:
    __slots__ = ("key", "shape", "variant_key", "skeleton", "metas", "consts", "values", "sample", "sizes")


class _Variant:
    def __init__(self, skeleton, metas, consts) -> None:
        counters = [0, 0]
        self.tree = _numbered(_tree_json(skeleton), counters)
        self.dtypes = [m[0] for m in metas]
        self.dims = [[[s, s, {s}, False] for s in m[1]] for m in metas]  # min, max, sizes, more
        self.devices = [{m[2]} for m in metas]
        self.int_leaves = [i for i, m in enumerate(metas) if m[0] in _INTEGER_DTYPES]
        self.values: dict[int, list] = {}
        self.consts = [[type(c).__name__ if c is not None else "None", [], False] for c in consts]
        self.calls = 0
        self.classes = None  # partition of (tensor, dim) by "always the same size"
        self.shapes: set = set()  # distinct shapes seen (up to MAX_SHAPE_KEYS)
        self.more_shapes = 0

    def add_shape(self, metas, consts) -> None:
        sizes = {}
        for i, m in enumerate(metas):
            if m[2] not in self.devices[i]:
                self.devices[i].add(m[2])
            for d, s in enumerate(m[1]):
                dim = self.dims[i][d]
                if s < dim[0]:
                    dim[0] = s
                if s > dim[1]:
                    dim[1] = s
                if s not in dim[2]:
                    if len(dim[2]) < MAX_SIZES:
                        dim[2].add(s)
                    else:
                        dim[3] = True
                sizes[(i, d)] = s
        if self.classes is None:
            groups: dict[int, list] = {}
            for member, s in sizes.items():
                groups.setdefault(s, []).append(member)
            self.classes = list(groups.values())
        else:
            refined = []
            for members in self.classes:
                if len(members) == 1:
                    refined.append(members)
                    continue
                groups = {}
                for member in members:
                    groups.setdefault(sizes[member], []).append(member)
                refined.extend(groups.values())
            self.classes = refined
        for j, c in enumerate(consts):
            entry = self.consts[j]
            if c not in entry[1]:
                if len(entry[1]) < MAX_CONST_VALUES and (c is None or type(c) in (bool, int, float, str)):
                    entry[1].append(c)
                else:
                    entry[2] = True
        shape = tuple(m[1] for m in metas)
        if shape in self.shapes:
            pass
        elif len(self.shapes) < MAX_SHAPE_KEYS:
            self.shapes.add(shape)
        else:
            self.more_shapes += 1

    def add_values(self, values) -> bool:
        """Widen the integer value ranges; True when one changed."""
        changed = False
        for i, lo, hi in values:
            r = self.values.get(i)
            if r is None:
                self.values[i] = [lo, hi]
                changed = True
                continue
            if lo < r[0]:
                r[0] = lo
                changed = True
            if hi > r[1]:
                r[1] = hi
                changed = True
        return changed

    def to_json(self, shape_counts: dict) -> dict:
        return {
            "args": self.tree["tuple"][0],
            "kwargs": self.tree["tuple"][1],
            "calls": self.calls,
            "tensors": [
                {
                    "dtype": self.dtypes[i],
                    "dims": [{"min": d[0], "max": d[1], "sizes": sorted(d[2]), "more_sizes": d[3]} for d in self.dims[i]],
                    "values": self.values.get(i),
                    "devices": sorted(self.devices[i]),
                }
                for i in range(len(self.dtypes))
            ],
            "consts": [{"type": c[0], "values": list(c[1]), "more_values": c[2]} for c in self.consts],
            "classes": [[list(m) for m in members] for members in (self.classes or [])],
            "shapes": [
                [[list(s) for s in shape], shape_counts.get(shape, 0)]
                for shape in sorted(self.shapes, key=lambda s: (-shape_counts.get(s, 0), s))
            ],
            "more_shapes": self.more_shapes,
        }


class _Method:
    def __init__(self, site: "_Site", name: str, arg_names) -> None:
        self.site = site
        self.name = name
        self.arg_names = list(arg_names or [])
        self.reset()

    def reset(self) -> None:
        self.calls = 0
        self.examples = 0
        self.uncached = 0
        self.dropped = 0  # calls whose structure was past MAX_VARIANTS
        self.shapes: dict = {}
        self.variants: dict = {}
        self.samples: list = []

    def before(self, args, kwargs):
        key = _call_key(args, kwargs)
        shape = self.shapes.get(key)
        if shape is not None:
            variant = shape.variant
            if variant.int_leaves:
                n = shape.value_calls
                shape.value_calls = n + 1
                if n < VALUE_RANGE_FIRST or n % VALUE_RANGE_EVERY == 0:
                    tensors: list = []
                    _flatten((args, kwargs), tensors, [])
                    return (shape, _value_ranges(tensors, variant.int_leaves))
            return shape
        return self._novel(key, args, kwargs)

    def _novel(self, key, args, kwargs):
        tensors: list = []
        consts: list = []
        skeleton = _flatten((args, kwargs), tensors, consts)
        metas = [(_dtype_name(t.dtype), tuple(int(s) for s in t.shape), t.device.type) for t in tensors]
        p = _Pending()
        p.key = key
        p.shape = None
        p.variant_key = (skeleton, tuple((m[0], len(m[1])) for m in metas))
        p.skeleton = skeleton
        p.metas = metas
        p.consts = consts
        ints = [i for i, m in enumerate(metas) if m[0] in _INTEGER_DTYPES]
        p.values = _value_ranges(tensors, ints) if ints else []
        p.sample = None
        if (
            len(self.samples) < shard.MAX_SAMPLES
            and shard.state["sample_bytes"] < MAX_PROCESS_SAMPLE_BYTES
            and _plain(skeleton)
        ):
            nbytes = sum(t.numel() * t.element_size() for t in tensors)
            shapes = tuple(m[1] for m in metas)
            if nbytes <= MAX_SAMPLE_BYTES and shapes not in {s["shapes"] for s in self.samples}:
                p.sample = (_clone(tuple(args)), _clone(dict(kwargs)), nbytes, shapes)
        return p

    def commit(self, p) -> None:
        if type(p) is _Shape:  # the hot path: a signature seen before
            p.count += 1
            p.variant.calls += 1
            self.calls += 1
            shard.flush_soon()
            return
        if type(p) is tuple:  # a signature seen before, with sampled integer value ranges
            shape, values = p
            shape.count += 1
            shape.variant.calls += 1
            self.calls += 1
            shape.variant.add_values(values)  # a wider value range is written within FLUSH_SECONDS
            shard.flush_soon()
            return
        with shard.lock:
            self.calls += 1
            variant = self.variants.get(p.variant_key)
            if variant is None:
                if len(self.variants) >= MAX_VARIANTS:
                    self.dropped += 1
                    shard.flush_soon()
                    return
                variant = self.variants[p.variant_key] = _Variant(p.skeleton, p.metas, p.consts)
            variant.calls += 1
            variant.add_shape(p.metas, p.consts)
            variant.add_values(p.values)
            if len(self.shapes) < MAX_SHAPE_KEYS:
                entry = self.shapes[p.key] = _Shape(variant, tuple(m[1] for m in p.metas))
                entry.count = 1
                entry.value_calls = 1
            else:
                self.uncached += 1
            if p.sample is not None:
                self._save_sample(p, list(self.variants).index(p.variant_key))
        shard.flush_soon(novel=True)

    def _save_sample(self, p, variant_index: int) -> None:
        args, kwargs, nbytes, shapes = p.sample
        name = f"sample-{shard.state['nonce']}-{shard.state['samples']}.pt"
        shard.state["samples"] += 1
        path = os.path.join(shard.folder, name)
        tmp = path + ".tmp"
        _torch.save((args, kwargs), tmp)
        os.replace(tmp, path)
        shard.state["sample_bytes"] += nbytes
        self.samples.append({"file": name, "variant": variant_index, "shapes": shapes, "bytes": nbytes})

    def to_json(self) -> dict:
        counts: dict = {}
        for shape in self.shapes.values():
            per = counts.setdefault(id(shape.variant), {})
            per[shape.dims] = per.get(shape.dims, 0) + shape.count
        return {
            "arg_names": self.arg_names,
            "calls": self.calls,
            "trace_examples": self.examples,
            "uncached_calls": self.uncached,
            "dropped_calls": self.dropped,
            "variants": [v.to_json(counts.get(id(v), {})) for v in self.variants.values()],
            "samples": [{**s, "shapes": [list(x) for x in s["shapes"]]} for s in self.samples],
        }


class _Site:
    def __init__(self, kind, file, line, end_line, col, end_col, function, target) -> None:
        self.kind = kind
        self.file = file
        self.line = line
        self.end_line = end_line
        self.col = col
        self.end_col = end_col
        self.function = function
        self.target = target
        self.created = 0
        self.artifacts: list = []  # paths loaded here
        self.saved: list = []  # paths the objects made here were saved to
        self.methods: dict[str, _Method] = {}
        self.proof: dict | None = None  # the verdict of the proof at exit (see .prove)
        self.compiled: list | None = None  # [file, qualname] of each class or function scripted or traced here
        self.callers: list | None = None  # [file, line] of the calls in the user's code that led here

    def method(self, name: str, arg_names=None) -> _Method:
        m = self.methods.get(name)
        if m is None:
            m = self.methods[name] = _Method(self, name, arg_names)
        elif arg_names and not m.arg_names:
            m.arg_names = list(arg_names)
        return m

    def reset(self) -> None:
        self.created = 0
        self.artifacts = []
        self.saved = []
        self.proof = None
        self.compiled = None
        self.callers = None
        for m in self.methods.values():
            m.reset()

    def to_json(self) -> dict:
        return {
            "kind": self.kind,
            "file": self.file,
            "line": self.line,
            "end_line": self.end_line,
            "col": self.col,
            "end_col": self.end_col,
            "function": self.function,
            "target": self.target,
            "created": self.created,
            "artifacts": list(self.artifacts),
            "saved": list(self.saved),
            "methods": {name: m.to_json() for name, m in self.methods.items()},
            **({"proof": self.proof} if self.proof is not None else {}),
            **({"compiled": [list(c) for c in self.compiled]} if self.compiled is not None else {}),
            **({"callers": [list(c) for c in self.callers]} if self.callers is not None else {}),
        }
