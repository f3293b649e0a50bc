"""`--inputs FILE`: a torch.save'd pytree of tensors, bound to a method's parameters.

The file holds what the method is called with, as a TorchScript module accepts it:

* one tensor: the only argument;
* a tuple or list: the positional arguments, each any pytree of tensors (a tuple or list given
  to a method whose only parameter is a tuple, list or dict is that one argument);
* a dict: the argument of a method whose first parameter is a `Dict`, else keyword arguments by
  parameter name (bound in order; skipped optional parameters take their defaults).

Loaded with `torch.load(weights_only=True)`: no pickled code runs.
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import torch
import torch.utils._pytree as pytree

from ts2export.artifact.errors import ArtifactError, one_line


def load_inputs_file(path: str | os.PathLike[str]) -> Any:
    """The object in the file, checked to be a pytree (tuples, lists, dicts) of tensors."""
    p = Path(path)
    if not p.exists():
        raise ArtifactError(f"{p}: no such file")
    if not p.is_file():
        raise ArtifactError(f"{p}: not a file")
    try:
        obj = torch.load(str(p), map_location="cpu", weights_only=True)
    except Exception as exc:
        raise ArtifactError(f"{p}: cannot read inputs: {one_line(exc)}") from None
    if not isinstance(obj, (torch.Tensor, tuple, list, dict)):
        raise ArtifactError(
            f"{p}: inputs file must hold a tensor, or a tuple, list or dict of tensors (torch.save); "
            f"it holds {type(obj).__name__}"
        )
    leaves, _ = pytree.tree_flatten_with_path(obj)
    if not leaves:
        raise ArtifactError(f"{p}: inputs file holds no tensor")
    for key, leaf in leaves:
        if not isinstance(leaf, torch.Tensor):
            where = pytree.keystr(key) or "the file"
            raise ArtifactError(
                f"{p}: inputs must be tensors (in tuples, lists or dicts); {where} is {type(leaf).__name__}"
            )
    return obj


# ---- binding to a TorchScript schema --------------------------------------------------------------


def _type_text(param: Any) -> str:
    return str(getattr(param, "type", "")).replace(" ", "")


def _fits(value: Any, type_text: str) -> bool:
    """Whether `value` can be passed for a parameter of TorchScript type `type_text` (loosely:
    containers by kind, tensors by being tensors; unknown types accept anything)."""
    if type_text.startswith("Optional["):
        return value is None or _fits(value, type_text[len("Optional["):-1])
    if type_text == "Tensor":
        return isinstance(value, torch.Tensor)
    if type_text.startswith("Dict["):
        return isinstance(value, dict)
    if type_text.startswith(("List[", "Tuple[")) or type_text.endswith("[]"):
        return isinstance(value, (list, tuple))
    return True


def _signature_text(method: str, params: Sequence[Any]) -> str:
    return f"{method}({', '.join(f'{a.name}: {a.type}' for a in params)})"


def _fits_all(args: Sequence[Any], params: Sequence[Any]) -> bool:
    required = [a for a in params if not a.has_default_value()]
    if not len(required) <= len(args) <= len(params):
        return False
    return all(_fits(v, _type_text(a)) for v, a in zip(args, params))


def bind_inputs(obj: Any, params: Sequence[Any] | None, method: str = "forward", source: str = "inputs file") -> tuple[Any, ...]:
    """Positional arguments for `method` from the object of an inputs file. `params` are the
    method's schema arguments without `self` (None: no schema; a tuple/list is the arguments)."""
    if params is None:
        if isinstance(obj, torch.Tensor) or isinstance(obj, dict):
            return (obj,)
        return tuple(obj)
    sig = _signature_text(method, params)
    if isinstance(obj, torch.Tensor):
        candidates: list[tuple[Any, ...]] = [(obj,)]
    elif isinstance(obj, dict):
        candidates = [(obj,)]
        names = [a.name for a in params]
        if obj and all(isinstance(k, str) for k in obj) and set(obj) <= set(names):
            keywords = _bind_keywords(obj, params, source, sig)
            takes_dict = bool(params) and _type_text(params[0]).startswith("Dict[")
            candidates.insert(1 if takes_dict else 0, keywords)
    else:
        candidates = [tuple(obj), (obj,)]
    for args in candidates:
        if _fits_all(args, params):
            return args
    required = [a for a in params if not a.has_default_value()]
    count = f"{len(required)}" + (f" to {len(params)}" if len(params) != len(required) else "")
    what = type(obj).__name__ if not isinstance(obj, torch.Tensor) else "one tensor"
    if isinstance(obj, (tuple, list)):
        what = f"a {type(obj).__name__} of {len(obj)}"
    elif isinstance(obj, dict):
        what = f"a dict with keys {', '.join(map(repr, obj))}"
    raise ArtifactError(f"{source} holds {what}, which does not fit {sig} ({count} argument(s))")


def _bind_keywords(obj: dict[str, Any], params: Sequence[Any], source: str, sig: str) -> tuple[Any, ...]:
    """Keyword arguments -> positional, in parameter order; gaps take the parameter's default."""
    last = max(i for i, a in enumerate(params) if a.name in obj)
    args = []
    for a in params[: last + 1]:
        if a.name in obj:
            args.append(obj[a.name])
        elif a.has_default_value():
            args.append(a.default_value)
        else:
            raise ArtifactError(f"{source} gives {', '.join(obj)} by name but not {a.name}: {sig}")
    return tuple(args)


def flat_tensors(args: Any) -> list[torch.Tensor]:
    return [t for t in pytree.tree_leaves(args) if isinstance(t, torch.Tensor)]


def conform(value: Any, spec: Any) -> Any:
    """`value` rebuilt with the containers of `spec` (a TreeSpec) where it differs only in list vs
    tuple or in dict key order, as TorchScript accepts; anything else is returned unchanged (the
    program then reports the difference)."""
    if spec is None or spec.is_leaf():
        return value
    children = spec.children() if callable(getattr(spec, "children", None)) else spec.children_specs  # torch < 2.12
    if spec.type in (tuple, list) and isinstance(value, (tuple, list)) and len(value) == len(children):
        return spec.type(conform(v, c) for v, c in zip(value, children))
    if spec.type is dict and isinstance(value, dict) and set(value) == set(spec.context):
        return {k: conform(value[k], c) for k, c in zip(spec.context, children)}
    return value
