"""The never-broken harness's size probe: every program a migrated program exports is called at
other sizes than its example's, where the export call asked for a dynamic dimension.

A program that runs after ``apply`` and gives the same outputs may still break later: its export
call may have specialized a size (a batch-1 example, a branch on a size) that the TorchScript
artifact served at any size, and the program's own run happened to use only the example's size.
With ``TS2EXPORT_PROBE_SIZES=FILE`` set, :func:`install` (run by the ``sitecustomize.py`` that
:func:`write_site` writes and the harness puts on the program's ``PYTHONPATH``) wraps
``torch.export.export``: after each export, for each tensor input (top-level, positional or
keyword), its first dimension where the ``dynamic_shapes`` entry is a ``Dim`` or a hint (the batch
a server varies), and each other dimension whose entry is a named ``Dim`` or ``Dim.DYNAMIC`` (what
the export call claims varies; ``Dim.AUTO`` lets export decide), it makes inputs at one less (not
below 2), one more and twice the example's size (within a named Dim's range; the example's values
repeated, so an index stays valid; the dims of other inputs with the same size move with it, as one
batch does), runs the eager module on them, and where the eager module takes
them, runs the exported program too. An exported program that refuses inputs the module takes, or
computes other values from them, is written to FILE as one JSON line, which the harness reads as a
break. The probe runs on copies of the module and with the random state saved and restored: the
program's own outputs are those it computes without the probe.

Sizes 0 and 1 are not probed: torch.export specializes them, and an exported program may refuse a
batch of 1 where the module's decomposition guards the size (`nn.EmbeddingBag` over a 2-D input:
`Guard failed: (-1 + L + L * B) // L >= 2`) whatever the example; that is torch's limit, not a size
the rewrite fixed, and docs/holds.md#specialized-sizes says so. A size-1 *example* is caught: its
probes at 2 and 3 fail where export specialized it.
"""

from __future__ import annotations

import json
import os

ENV = "TS2EXPORT_PROBE_SIZES"
_SITE = """# Written by the never-broken harness: the size probe of ts2export.harness.sizes.
import os

if os.environ.get("TS2EXPORT_PROBE_SIZES"):
    from ts2export.harness.sizes import install

    install(os.environ["TS2EXPORT_PROBE_SIZES"])
"""
#: Probes per export call, at most; inputs larger than this many elements are not probed.
MAX_PROBES = 12
MAX_ELEMENTS = 1 << 20


def write_site(folder: str | os.PathLike[str]) -> str:
    """Write the ``sitecustomize.py`` that installs the probe into ``folder``; the folder."""
    os.makedirs(folder, exist_ok=True)
    with open(os.path.join(folder, "sitecustomize.py"), "w", encoding="utf-8") as out:
        out.write(_SITE)
    return os.fspath(folder)


def read_report(report: str | os.PathLike[str]) -> list[dict]:
    """The failures the probe wrote (none when it wrote nothing)."""
    try:
        with open(report, encoding="utf-8") as f:
            return [json.loads(line) for line in f if line.strip()]
    except FileNotFoundError:
        return []


def install(report: str) -> None:
    import torch

    real = torch.export.export
    if getattr(real, "_ts2export_probe", False):
        return

    def export(mod, args=(), kwargs=None, *rest, dynamic_shapes=None, **options):
        ep = real(mod, args, kwargs, *rest, dynamic_shapes=dynamic_shapes, **options)
        try:
            failures = probe(torch, mod, ep, tuple(args), dict(kwargs or {}), dynamic_shapes)
        except Exception:  # noqa: BLE001 - the probe never changes what the program does
            failures = []
        if failures:
            with open(report, "a", encoding="utf-8") as out:
                for failure in failures:
                    out.write(json.dumps(failure) + "\n")
        return ep

    export._ts2export_probe = True
    export.__wrapped__ = real
    torch.export.export = export


def probe(torch, mod, ep, args: tuple, kwargs: dict, dynamic_shapes) -> list[dict]:
    """The sizes at which the exported program ``ep`` refuses (or computes otherwise) inputs the
    eager module ``mod`` takes; one dict per failure."""
    import copy

    wanted = list(_dynamic_dims(torch, mod, args, kwargs, dynamic_shapes))
    if not wanted:
        return []
    tensors = [(w, t) for w, t in [*enumerate(args), *kwargs.items()] if isinstance(t, torch.Tensor)]
    failures: list[dict] = []
    tried = 0
    for where, tensor, dim, spec in wanted:
        if tensor.numel() > MAX_ELEMENTS or not (dim == 0 or _claimed(spec)):
            continue  # Dim.AUTO beyond the batch dim: export decides, nothing claims the size varies
        size = tensor.shape[dim]
        # the dims of other inputs with the same size move with it (one batch, one sequence length):
        # alone, a size-1 input would broadcast where the program's inputs never do
        linked = [(w, d) for w, t in tensors for d in range(t.dim()) if t.shape[d] == size]
        lo, hi = _bounds(spec)
        for new in sorted({size - 1, size + 1, 2 * size} - {size, 0, 1}):
            if new < lo or (hi is not None and new > hi):
                continue
            if tried >= MAX_PROBES:
                return failures
            tried += 1
            a, k = _resized(torch, args, kwargs, linked, new)
            with torch.random.fork_rng(devices=[]):
                torch.manual_seed(0)
                try:
                    expected = copy.deepcopy(mod)(*a, **k)
                except Exception:  # noqa: BLE001, S112 - the module itself refuses this size
                    continue
                torch.manual_seed(0)
                try:
                    got = copy.deepcopy(ep).module()(*a, **k)
                except Exception as exc:  # noqa: BLE001 - the break this probe looks for
                    failures.append({"input": where, "dim": dim, "example": size, "size": new,
                                     "error": f"{type(exc).__name__}: {str(exc).strip().splitlines()[0][:300]}"})
                    continue
                torch.manual_seed(0)
                again = copy.deepcopy(mod)(*a, **k)
            if _same(torch, expected, again) and not _same(torch, expected, got):
                failures.append({"input": where, "dim": dim, "example": size, "size": new,
                                 "error": "the exported program computes other values than the module"})
    return failures


def _claimed(spec) -> bool:
    """Whether a dynamic_shapes entry says the size varies: a named Dim (a range) or Dim.DYNAMIC
    (``Dim.AUTO`` lets export decide)."""
    return "AUTO" not in repr(spec)


def _bounds(spec) -> tuple[int, int | None]:
    """The sizes a named Dim admits (min, max); any size >= 1 for a hint."""
    lo, hi = getattr(spec, "min", None), getattr(spec, "max", None)
    lo = lo if isinstance(lo, int) else 1
    hi = hi if isinstance(hi, int) and hi < (1 << 40) else None
    return max(lo, 1), hi


def _dynamic_dims(torch, mod, args: tuple, kwargs: dict, dynamic_shapes):
    """(where, tensor, dim) of each top-level tensor input and dimension the export call asked to
    keep dynamic. ``where``: the position (int) or the keyword (str)."""
    if dynamic_shapes is None:
        return
    inputs: list[tuple[object, object]] = list(enumerate(args)) + list(kwargs.items())
    if isinstance(dynamic_shapes, dict):
        names = _parameter_names(mod)
        specs = {where: dynamic_shapes.get(names.get(where, where)) for where, _ in inputs}
    else:
        shapes = list(dynamic_shapes)
        specs = {where: (shapes[where] if isinstance(where, int) and where < len(shapes) else None) for where, _ in inputs}
    for where, value in inputs:
        spec = specs.get(where)
        if not isinstance(value, torch.Tensor) or spec is None:
            continue
        items = spec.items() if isinstance(spec, dict) else enumerate(spec) if isinstance(spec, (list, tuple)) else ()
        for dim, d in items:
            if isinstance(dim, int) and 0 <= dim < value.dim() and d is not None and not isinstance(d, int):
                yield where, value, dim, d


def _parameter_names(mod) -> dict[int, str]:
    """Position -> name of the parameters of the module's forward (``dynamic_shapes`` given as a
    dict is keyed by them)."""
    import inspect

    try:
        params = list(inspect.signature(mod.forward).parameters.values())
    except (TypeError, ValueError):
        return {}
    return {i: p.name for i, p in enumerate(params) if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD)}


def _resized(torch, args: tuple, kwargs: dict, dims: list, size: int) -> tuple[tuple, dict]:
    """The inputs with each (where, dim) of ``dims`` at ``size`` (the example's values repeated)."""
    def resize(t, dim):
        reps = -(-size // t.shape[dim])
        return torch.cat([t] * reps, dim).narrow(dim, 0, size) if reps > 1 else t.narrow(dim, 0, size)

    a, k = list(args), dict(kwargs)
    for where, dim in dims:
        if isinstance(where, int):
            a[where] = resize(a[where], dim)
        else:
            k[where] = resize(k[where], dim)
    return tuple(a), k


def _same(torch, a, b) -> bool:
    from torch.utils._pytree import tree_flatten

    la, sa = tree_flatten(a)
    lb, sb = tree_flatten(b)
    if sa != sb or len(la) != len(lb):
        return False
    for x, y in zip(la, lb):
        if isinstance(x, torch.Tensor) != isinstance(y, torch.Tensor):
            return False
        if isinstance(x, torch.Tensor):
            if x.shape != y.shape or x.dtype != y.dtype:
                return False
            try:
                torch.testing.assert_close(y, x, equal_nan=True)
            except AssertionError:
                return False
        elif x != y:
            return False
    return True
