"""Compare two model outputs: pytree structure first, then every leaf with dtype-aware tolerances."""

from __future__ import annotations

import dataclasses
from typing import Any

import torch
import torch.utils._pytree as pytree
from torch.testing._comparison import default_tolerances

# torch.testing has no defaults for float8; these follow the mantissa width of each format.
_FLOAT8_TOLERANCES: dict[torch.dtype, tuple[float, float]] = {
    torch.float8_e4m3fn: (1.25e-1, 1e-2),
    torch.float8_e4m3fnuz: (1.25e-1, 1e-2),
    torch.float8_e5m2: (2.5e-1, 1e-2),
    torch.float8_e5m2fnuz: (2.5e-1, 1e-2),
    torch.float8_e8m0fnu: (0.0, 0.0),  # exponent-only: values are powers of two, compare exactly
}


def tolerances(dtype: torch.dtype) -> tuple[float, float]:
    """(rtol, atol) for `dtype`: torch.testing.assert_close defaults, float8 from the table above."""
    if dtype in _FLOAT8_TOLERANCES:
        return _FLOAT8_TOLERANCES[dtype]
    return default_tolerances(dtype)


@dataclasses.dataclass
class LeafResult:
    output: str
    ok: bool
    shape: list[int] | None = None
    dtype: str | None = None
    max_abs: float | None = None
    max_rel: float | None = None
    pct_out: float | None = None
    rtol: float | None = None
    atol: float | None = None
    detail: str = ""


@dataclasses.dataclass
class CompareResult:
    ok: bool
    structure: str | None  # why structures differ, or None
    leaves: list[LeafResult]


def _wide(t: torch.Tensor) -> torch.Tensor:
    t = t.detach().cpu()
    if t.dtype.is_complex:
        return t.to(torch.complex128)
    if t.dtype.is_floating_point:
        if t.dtype.itemsize == 1:  # float8 formats: go through float32
            t = t.to(torch.float32)
        return t.to(torch.float64)
    return t.to(torch.int64)


def compare_leaf(name: str, expected: Any, actual: Any, rtol: float | None, atol: float | None) -> LeafResult:
    if not isinstance(expected, torch.Tensor) or not isinstance(actual, torch.Tensor):
        if isinstance(expected, torch.Tensor) != isinstance(actual, torch.Tensor):
            return LeafResult(
                name, False, detail=f"type differs: {type(expected).__name__} vs {type(actual).__name__}"
            )
        same = expected == actual or (expected != expected and actual != actual)
        return LeafResult(name, bool(same), detail="" if same else f"value differs: {expected!r} vs {actual!r}")
    shape = list(expected.shape)
    dtype = str(expected.dtype).removeprefix("torch.")
    res = LeafResult(name, True, shape=shape, dtype=dtype)
    if expected.dtype != actual.dtype:
        res.ok = False
        res.detail = f"dtype differs: {dtype} vs {str(actual.dtype).removeprefix('torch.')}"
        return res
    if expected.shape != actual.shape:
        res.ok = False
        res.detail = f"shape differs: {shape} vs {list(actual.shape)}"
        return res
    exact = not (expected.dtype.is_floating_point or expected.dtype.is_complex)
    r, a = tolerances(expected.dtype)
    if rtol is not None and not exact:  # integers and bools are always compared exactly
        r, a = rtol, atol
    res.rtol, res.atol = r, a
    e, g = _wide(expected), _wide(actual)
    n = e.numel()
    if exact:
        close = e == g
    else:
        close = torch.isclose(g, e, rtol=r, atol=a, equal_nan=True)
    if n:
        finite = torch.isfinite(e) & torch.isfinite(g)
        diff = (e - g).abs()
        fd = diff[finite]
        res.max_abs = float(fd.max()) if fd.numel() else 0.0
        denom = e.abs()[finite]
        nz = denom != 0
        res.max_rel = float((fd[nz] / denom[nz]).max()) if bool(nz.any()) else 0.0
        res.pct_out = 100.0 * float((~close).sum()) / n
    else:
        res.max_abs = res.max_rel = res.pct_out = 0.0
    if not exact:
        nan_diff = int((torch.isnan(e) != torch.isnan(g)).sum())
        inf_diff = int(((torch.isinf(e) | torch.isinf(g)) & (e != g) & ~(torch.isnan(e) | torch.isnan(g))).sum())
        notes = []
        if nan_diff:
            notes.append(f"NaN at {nan_diff} different position(s)")
        if inf_diff:
            notes.append(f"Inf at {inf_diff} different position(s)")
        if notes:
            res.detail = "; ".join(notes)
        elif bool(torch.isnan(e).any()):
            res.detail = "NaN in both (same positions)"
    # Same verdict as torch.testing.assert_close(equal_nan=True), from the same isclose mask; on a
    # mismatch its own summary becomes the detail.
    if n and not bool(close.all()):
        res.ok = False
        if not res.detail:
            res.detail = _assert_close_summary(g, e, r, a)
    return res


def _assert_close_summary(actual: torch.Tensor, expected: torch.Tensor, rtol: float, atol: float) -> str:
    try:
        torch.testing.assert_close(actual, expected, rtol=rtol, atol=atol, equal_nan=True)
    except AssertionError as exc:
        lines = [line.strip() for line in str(exc).splitlines() if line.strip().startswith("Mismatched elements")]
        return lines[0] if lines else "values out of tolerance"
    return "values out of tolerance"


def normalize(tree: Any) -> Any:
    """Plain containers for comparison: fx's immutable_dict/immutable_list become dict/list."""
    if isinstance(tree, dict):
        return {k: normalize(v) for k, v in tree.items()}
    if isinstance(tree, list):
        return [normalize(v) for v in tree]
    if isinstance(tree, tuple):
        items = [normalize(v) for v in tree]
        return type(tree)(*items) if hasattr(tree, "_fields") else tuple(items)
    return tree


def compare_outputs(
    expected: Any,
    actual: Any,
    rtol: float | None = None,
    atol: float | None = None,
    flat: bool = False,
) -> CompareResult:
    """Compare output trees. `flat=True` compares only the leaves in order (for `.pte`, whose outputs
    come back as a flat list)."""
    expected = normalize(expected)
    exp_leaves, exp_spec = pytree.tree_flatten_with_path(expected)
    if flat:
        act_flat = list(actual)
        if len(act_flat) != len(exp_leaves):
            return CompareResult(
                False, f"output count differs: {len(exp_leaves)} expected, {len(act_flat)} produced", []
            )
        pairs = [(pytree.keystr(p) or "output", v, a) for (p, v), a in zip(exp_leaves, act_flat)]
    else:
        act_leaves, act_spec = pytree.tree_flatten_with_path(normalize(actual))
        if exp_spec != act_spec:
            return CompareResult(False, f"output structure differs: {_brief(exp_spec)} vs {_brief(act_spec)}", [])
        pairs = [(pytree.keystr(p) or "output", v, a) for (p, v), (_, a) in zip(exp_leaves, act_leaves)]
    leaves = [compare_leaf(name, e, a, rtol, atol) for name, e, a in pairs]
    return CompareResult(all(leaf.ok for leaf in leaves), None, leaves)


def _brief(spec: Any) -> str:
    text = " ".join(str(spec).split())
    return text if len(text) <= 160 else text[:157] + "..."
