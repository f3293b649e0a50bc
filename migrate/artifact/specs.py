"""Input specifications: the `--input` grammar, signatures read from an ExportedProgram, and samples.

Grammar (one `--input` per positional input, in order)::

    spec   := DTYPE "[" [dim ("," dim)*] "]" [range]
    dim    := INT                       static size
            | NAME "=" INT ".." [INT]   dynamic dim with a range (no upper bound if omitted)
            | NAME                      the same dynamic dim as an earlier NAME=lo..hi
    range  := "{" NUM ".." NUM "}"       value range, inclusive (integers) or [lo, hi) (floats)
    DTYPE  := a torch dtype name: float32, float16, bfloat16, int64, int32, bool, float8_e4m3fn, ...

Examples: ``float32[2,3,224,224]``, ``float32[B=1..64,3,224,224]``, ``int64[B,7]{0..999}``.
"""

from __future__ import annotations

import dataclasses
import re
from collections.abc import Mapping, Sequence
from typing import Any

import sympy
import torch

from ts2export.artifact.errors import ArtifactError

DEFAULT_DIM_CAP = 64
DEFAULT_INT_RANGE = (0, 9)

_NAME = r"[A-Za-z_][A-Za-z0-9_]*"
_SPEC_RE = re.compile(r"^\s*(?P<dtype>[A-Za-z0-9_]+)\s*\[(?P<dims>[^\]]*)\]\s*(?:\{(?P<range>[^}]*)\})?\s*$")
_DYN_RE = re.compile(rf"^(?P<name>{_NAME})\s*=\s*(?P<lo>\d+)\s*\.\.\s*(?P<hi>\d+)?$")
_NUM = r"[-+]?(?:\d+\.?\d*|\.\d+)(?:[eE][-+]?\d+)?"
_RANGE_RE = re.compile(rf"^\s*(?P<lo>{_NUM})\s*\.\.\s*(?P<hi>{_NUM})\s*$")


def parse_dtype(name: str) -> torch.dtype:
    dtype = getattr(torch, name, None)
    if not isinstance(dtype, torch.dtype):
        raise ArtifactError(f"unknown dtype {name!r} (use a torch dtype name such as float32, int64, bool)")
    return dtype


def dtype_name(dtype: torch.dtype) -> str:
    return str(dtype).removeprefix("torch.")


@dataclasses.dataclass
class Leaf:
    """One tensor input: dtype, dims (int or sympy expression over named dims) and value range."""

    dtype: torch.dtype
    dims: tuple[Any, ...]
    low: float | None = None
    high: float | None = None

    def describe(self) -> str:
        dims = ",".join(str(d) for d in self.dims)
        rng = "" if self.low is None else f"{{{_fmt_num(self.low)}..{_fmt_num(self.high)}}}"
        return f"{dtype_name(self.dtype)}[{dims}]{rng}"


def _fmt_num(x: float | None) -> str:
    if x is None:
        return ""
    return str(int(x)) if float(x).is_integer() else str(x)


@dataclasses.dataclass
class Signature:
    """Flat tensor inputs plus the ranges of the named dynamic dims they use."""

    leaves: list[Leaf]
    symbols: dict[str, tuple[int, int | None]]  # name -> (min, max or None for unbounded)

    # ---- sizes ---------------------------------------------------------------------------
    def example_sizes(self) -> dict[str, int]:
        """Sizes used to export: at least 2 (torch.export specializes 0 and 1), within range."""
        out = {}
        for name, (lo, hi) in self.symbols.items():
            size = max(lo, 2)
            out[name] = size if hi is None else min(size, hi)
        return out

    def sample_sizes(self, count: int, cap: int = DEFAULT_DIM_CAP, seed: int = 0) -> list[tuple[str, dict[str, int]]]:
        """`count` size assignments: all dims at min, at max (capped), in the middle, then random."""
        if not self.symbols:
            return [("static", {})] * count
        bounds = {}
        for name, (lo, hi) in self.symbols.items():
            top = max(lo, min(cap, hi) if hi is not None else cap)
            bounds[name] = (lo, top)
        plans = [
            ("min", {n: lo for n, (lo, _) in bounds.items()}),
            ("max", {n: hi for n, (_, hi) in bounds.items()}),
            ("mid", {n: (lo + hi) // 2 for n, (lo, hi) in bounds.items()}),
        ]
        gen = torch.Generator().manual_seed(seed)
        out = []
        for i in range(count):
            if i < len(plans):
                out.append(plans[i])
            else:
                sizes = {
                    n: int(torch.randint(lo, hi + 1, (1,), generator=gen)) for n, (lo, hi) in bounds.items()
                }
                out.append(("random", sizes))
        return out

    def limit_dims(self, limits: Sequence[Sequence[int]]) -> dict[str, int]:
        """Lower the upper bound of each named dim to the sizes in `limits` (per leaf, per axis);
        returns {name: new upper bound} for the dims that changed."""
        changed: dict[str, int] = {}
        for leaf, sizes in zip(self.leaves, limits):
            for d, top in zip(leaf.dims, sizes):
                if isinstance(d, str) and d in self.symbols:
                    lo, hi = self.symbols[d]
                    if hi is None or top < hi:
                        self.symbols[d] = (lo, max(lo, int(top)))
                        changed[d] = self.symbols[d][1]
        return changed

    def describe(self) -> list[str]:
        """The leaves in the --input grammar, each dim range written where the name first appears."""
        seen: set[str] = set()
        out = []
        for leaf in self.leaves:
            dims = []
            for d in leaf.dims:
                if isinstance(d, str) and d not in seen and d in self.symbols:
                    seen.add(d)
                    lo, hi = self.symbols[d]
                    dims.append(f"{d}={lo}..{'' if hi is None else hi}")
                else:
                    dims.append(str(d))
            rng = "" if leaf.low is None else f"{{{_fmt_num(leaf.low)}..{_fmt_num(leaf.high)}}}"
            out.append(f"{dtype_name(leaf.dtype)}[{','.join(dims)}]{rng}")
        return out

    def shape(self, leaf: Leaf, sizes: Mapping[str, int]) -> list[int]:
        return [d if isinstance(d, int) else _eval_dim(d, sizes) for d in leaf.dims]

    # ---- tensors ---------------------------------------------------------------------------
    def make(self, sizes: Mapping[str, int], generator: torch.Generator) -> list[torch.Tensor]:
        return [make_tensor(leaf, self.shape(leaf, sizes), generator) for leaf in self.leaves]

    def dynamic_shapes(self) -> tuple[dict[int, Any] | None, ...]:
        """`torch.export` dynamic_shapes for positional inputs: one torch.export.Dim per name."""
        dims: dict[str, Any] = {}
        for name, (lo, hi) in self.symbols.items():
            kwargs = {"min": lo}
            if hi is not None:
                kwargs["max"] = hi
            dims[name] = torch.export.Dim(name, **kwargs)
        out = []
        for leaf in self.leaves:
            axes = {i: dims[d] for i, d in enumerate(leaf.dims) if isinstance(d, str)}
            out.append(axes or None)
        return tuple(out)

    def check(self, tensors: Sequence[Any], what: str = "inputs") -> None:
        """Raise ArtifactError when `tensors` do not fit: count, dtype, rank, static dims, dim ranges."""
        if len(tensors) != len(self.leaves):
            raise ArtifactError(f"{what}: expected {len(self.leaves)} input tensor(s), got {len(tensors)}")
        seen: dict[str, int] = {}
        for i, (leaf, t) in enumerate(zip(self.leaves, tensors)):
            if not isinstance(t, torch.Tensor):
                raise ArtifactError(f"{what}: input {i} must be a tensor, got {type(t).__name__}")
            if t.dtype != leaf.dtype:
                raise ArtifactError(
                    f"{what}: input {i} has dtype {dtype_name(t.dtype)}, the program expects {dtype_name(leaf.dtype)}"
                )
            if t.dim() != len(leaf.dims):
                raise ArtifactError(
                    f"{what}: input {i} has rank {t.dim()} (shape {list(t.shape)}), the program expects "
                    f"rank {len(leaf.dims)} ({leaf.describe()})"
                )
            for axis, (d, size) in enumerate(zip(leaf.dims, t.shape)):
                if isinstance(d, int):
                    if d != size:
                        raise ArtifactError(
                            f"{what}: input {i} dim {axis} is {size}, the program expects {d} ({leaf.describe()})"
                        )
                elif isinstance(d, str):
                    lo, hi = self.symbols[d]
                    if size < lo or (hi is not None and size > hi):
                        top = "inf" if hi is None else hi
                        raise ArtifactError(
                            f"{what}: input {i} dim {axis} ({d}) is {size}, outside its range {lo}..{top}"
                        )
                    if seen.setdefault(d, size) != size:
                        raise ArtifactError(
                            f"{what}: dim {d} is {seen[d]} in one input and {size} in input {i}; they must match"
                        )


def _eval_dim(d: Any, sizes: Mapping[str, int]) -> int:
    if isinstance(d, str):
        return int(sizes[d])
    expr = sympy.sympify(d)
    mapping = {s: sizes[s.name] for s in expr.free_symbols if s.name in sizes}
    value = expr.subs(mapping)
    if not value.is_number:
        raise ArtifactError(f"cannot size dim {d}: unknown symbols {sorted(str(s) for s in value.free_symbols)}")
    return int(value)


def make_tensor(leaf: Leaf, shape: Sequence[int], generator: torch.Generator) -> torch.Tensor:
    """A random tensor of `leaf.dtype` and `shape`, honouring the leaf's value range."""
    dtype = leaf.dtype
    if dtype == torch.bool:
        return torch.randint(0, 2, tuple(shape), generator=generator).bool()
    if dtype.is_complex:
        return torch.randn(tuple(shape), generator=generator, dtype=dtype)
    if dtype == torch.float8_e8m0fnu:
        lo = int(leaf.low) if leaf.low is not None else -4
        hi = int(leaf.high) if leaf.high is not None else 4
        exps = torch.randint(lo, hi + 1, tuple(shape), generator=generator).float()
        return torch.exp2(exps).to(dtype)
    if dtype.is_floating_point:
        if leaf.low is not None:
            t = torch.rand(tuple(shape), generator=generator) * (leaf.high - leaf.low) + leaf.low
        else:
            t = torch.randn(tuple(shape), generator=generator)
        return t.to(dtype)
    lo, hi = (int(leaf.low), int(leaf.high)) if leaf.low is not None else DEFAULT_INT_RANGE
    info = torch.iinfo(dtype)
    lo, hi = max(lo, info.min), min(hi, info.max)
    return torch.randint(lo, hi + 1, tuple(shape), generator=generator, dtype=torch.int64).to(dtype)


# ---- parsing the user grammar -------------------------------------------------------------------


def parse_specs(texts: Sequence[str]) -> Signature:
    """Parse `--input` specs; named dims are shared across specs."""
    symbols: dict[str, tuple[int, int | None]] = {}
    leaves = []
    for text in texts:
        m = _SPEC_RE.match(text)
        if not m:
            raise ArtifactError(
                f"bad input spec {text!r}: expected DTYPE[dims]{{lo..hi}}, e.g. float32[B=1..64,3,224,224] or int64[4,7]{{0..999}}"
            )
        dtype = parse_dtype(m["dtype"])
        dims: list[Any] = []
        body = m["dims"].strip()
        for part in [p.strip() for p in body.split(",")] if body else []:
            if part.isdigit():
                dims.append(int(part))
                continue
            dm = _DYN_RE.match(part)
            if dm:
                name, lo = dm["name"], int(dm["lo"])
                hi = int(dm["hi"]) if dm["hi"] is not None else None
                if hi is not None and hi < lo:
                    raise ArtifactError(f"bad input spec {text!r}: range {lo}..{hi} of {name} is empty")
                if name in symbols and symbols[name] != (lo, hi):
                    raise ArtifactError(f"bad input spec {text!r}: dim {name} defined twice with different ranges")
                symbols[name] = (lo, hi)
                dims.append(name)
            elif re.fullmatch(_NAME, part):
                if part not in symbols:
                    raise ArtifactError(
                        f"bad input spec {text!r}: dim {part} has no range; write {part}=MIN..MAX where it first appears"
                    )
                dims.append(part)
            else:
                raise ArtifactError(f"bad input spec {text!r}: cannot read dim {part!r}")
        low = high = None
        if m["range"] is not None:
            rm = _RANGE_RE.match(m["range"])
            if not rm:
                raise ArtifactError(f"bad input spec {text!r}: value range must read {{lo..hi}}")
            low, high = float(rm["lo"]), float(rm["hi"])
            if high < low:
                raise ArtifactError(f"bad input spec {text!r}: value range {rm['lo']}..{rm['hi']} is empty")
            if dtype == torch.bool:
                raise ArtifactError(f"bad input spec {text!r}: bool inputs take no value range")
        leaves.append(Leaf(dtype, tuple(dims), low, high))
    return Signature(leaves, symbols)


def spec_from_tensors(tensors: Sequence[torch.Tensor]) -> Signature:
    """A static signature describing concrete tensors (value ranges taken from the values)."""
    leaves = []
    for t in tensors:
        leaf = Leaf(t.dtype, tuple(int(s) for s in t.shape))
        if t.numel() and not t.dtype.is_floating_point and t.dtype != torch.bool and not t.dtype.is_complex:
            leaf.low, leaf.high = float(t.min()), float(t.max())
        leaves.append(leaf)
    return Signature(leaves, {})


# ---- signatures read from an ExportedProgram ------------------------------------------------------


def _bound(v: Any) -> int | None:
    try:
        f = float(v)
    except (TypeError, ValueError):
        return None
    if f != f or f in (float("inf"), float("-inf")):
        return None
    return int(f)


def signature_from_program(
    ep: Any,
    value_ranges: Sequence[tuple[float, float] | None] | None = None,
    user_specs: Sequence[str] | None = None,
) -> Signature:
    """Signature of an ExportedProgram's user inputs: dtype and shape from placeholder meta["val"],
    dynamic dim ranges from ep.range_constraints. Integer value ranges come from `value_ranges`
    (recorded at convert time) or else from the stored example inputs."""
    from torch.export.graph_signature import InputKind

    user_names = [
        s.arg.name for s in ep.graph_signature.input_specs if s.kind == InputKind.USER_INPUT
    ]
    placeholders = {n.name: n for n in ep.graph.nodes if n.op == "placeholder"}
    ranges = {str(k): v for k, v in ep.range_constraints.items()}
    symbols: dict[str, tuple[int, int | None]] = {}
    leaves = []
    for name in user_names:
        val = placeholders[name].meta.get("val")
        if not isinstance(val, torch.Tensor):
            raise ArtifactError(f"program input {name} is not a tensor ({type(val).__name__}); cannot generate samples")
        dims: list[Any] = []
        for d in val.shape:
            if isinstance(d, torch.SymInt):
                expr = d.node.expr
                if isinstance(expr, sympy.Symbol):
                    dims.append(expr.name)
                else:
                    dims.append(expr)
                for sym in expr.free_symbols:
                    vr = ranges.get(str(sym))
                    lo = _bound(vr.lower) if vr is not None else 0
                    symbols[sym.name] = (lo if lo is not None else 0, _bound(vr.upper) if vr is not None else None)
            else:
                dims.append(int(d))
        leaves.append(Leaf(val.dtype, tuple(dims)))
    examples = None
    if ep.example_inputs is not None:
        examples = [x for x in torch.utils._pytree.tree_leaves(ep.example_inputs) if isinstance(x, torch.Tensor)]
    for i, leaf in enumerate(leaves):
        given = value_ranges[i] if value_ranges and i < len(value_ranges) else None
        if given is not None:
            leaf.low, leaf.high = given
        elif (
            examples is not None
            and len(examples) == len(leaves)
            and not leaf.dtype.is_floating_point
            and not leaf.dtype.is_complex
            and leaf.dtype != torch.bool
            and examples[i].numel()
        ):
            leaf.low, leaf.high = float(examples[i].min()), float(examples[i].max())
    sig = Signature(leaves, symbols)
    if user_specs:
        _adopt_names(sig, user_specs)
    return sig


def _adopt_names(sig: Signature, user_specs: Sequence[str]) -> None:
    """Rename program symbols (s0, s1, ...) to the dim names the user gave at convert time."""
    try:
        user = parse_specs(user_specs)
    except ArtifactError:
        return
    if len(user.leaves) != len(sig.leaves):
        return
    if any(not isinstance(d, (int, str)) for leaf in sig.leaves for d in leaf.dims):
        return  # derived dims (e.g. 2*s0) keep the program's symbol names
    rename: dict[str, str] = {}
    for mine, theirs in zip(sig.leaves, user.leaves):
        for d, u in zip(mine.dims, theirs.dims):
            if isinstance(d, str) and isinstance(u, str):
                rename.setdefault(d, u)
    if len(set(rename.values())) != len(rename):
        return
    for leaf in sig.leaves:
        leaf.dims = tuple(rename.get(d, d) if isinstance(d, str) else d for d in leaf.dims)
    sig.symbols = {rename.get(k, k): v for k, v in sig.symbols.items()}


def split_specs(specs: Sequence[str]) -> dict[str | None, list[str]]:
    """`METHOD:SPEC` applies to METHOD; a bare SPEC to forward (or to the only method in play)."""
    out: dict[str | None, list[str]] = {}
    for s in specs:
        m = re.match(r"^\s*([A-Za-z_][A-Za-z0-9_]*)\s*:(.*)$", s)
        if m:
            out.setdefault(m.group(1), []).append(m.group(2))
        else:
            out.setdefault(None, []).append(s)
    return out


def specs_for(method: str, specs: Sequence[str], methods: Sequence[str]) -> list[str]:
    by = split_specs(specs)
    if method in by:
        return by[method]
    if method == "forward" or len(methods) == 1:
        return by.get(None, [])
    return []
