"""The tensors a program builds, read statically: a tensor's *spec* is its rank, the sizes each
dimension is seen at (``torch.rand(n, 3, 28, 28)`` inside ``for n in (1, 3, 5)`` is seen at 1, 3
and 5 in dimension 0) and its dtype; and the integers an expression may have (loop variables over
literals included)."""

from __future__ import annotations

import ast
from dataclasses import dataclass

from ts2export.model.literals import Literals
from ts2export.model.names import Names
from ts2export.model.pyfile import PyFile, returns_of
from ts2export.model.values import Values

_FACTORIES = {"randn", "rand", "zeros", "ones", "empty", "randint", "full", "tensor", "arange", "linspace", "logspace",
              "eye"}
_LIKE = {"torch.randn_like", "torch.rand_like", "torch.zeros_like", "torch.ones_like", "torch.empty_like",
         "torch.full_like", "torch.randint_like"}
_ELEMENTWISE_FUNCS = {"torch.add", "torch.sub", "torch.mul", "torch.maximum", "torch.minimum", "torch.abs", "torch.exp",
                      "torch.sigmoid", "torch.tanh", "torch.relu", "torch.sin", "torch.cos", "torch.sqrt", "torch.log"}
_DTYPES = {
    "float": "torch.float32", "float32": "torch.float32", "double": "torch.float64", "float64": "torch.float64",
    "half": "torch.float16", "float16": "torch.float16", "bfloat16": "torch.bfloat16", "long": "torch.int64",
    "int64": "torch.int64", "int": "torch.int32", "int32": "torch.int32", "int16": "torch.int16", "short": "torch.int16",
    "int8": "torch.int8", "uint8": "torch.uint8", "bool": "torch.bool",
}
_CASTS = {"float": "torch.float32", "double": "torch.float64", "half": "torch.float16", "bfloat16": "torch.bfloat16",
          "long": "torch.int64", "int": "torch.int32", "bool": "torch.bool"}
_SAME_SHAPE = {"clone", "detach", "contiguous", "cpu", "cuda", "requires_grad_", "abs", "neg", "relu", "sigmoid",
               "tanh", "exp", "normal_", "uniform_", "fill_", "zero_", "mul", "add", "sub", "div"}
_MAX_SIZES = 32


@dataclass(frozen=True)
class TensorSpec:
    """A tensor as the program builds it: per dimension the sizes seen (None: unknown), and dtype."""

    dims: tuple[frozenset[int] | None, ...]
    dtype: str

    def merged(self, other: "TensorSpec") -> "TensorSpec | None":
        if len(self.dims) != len(other.dims) or self.dtype != other.dtype:
            return None
        return TensorSpec(tuple(None if a is None or b is None else a | b for a, b in zip(self.dims, other.dims)), self.dtype)

    @property
    def known(self) -> bool:
        return all(d is not None for d in self.dims)

    def example(self) -> str:
        """Code for one tensor of this spec: a size seen >= 2 where there is one (export
        specializes sizes 0 and 1), ones for floating point, zeros for integers and booleans."""
        sizes = []
        for d in self.dims:
            big = sorted(s for s in d if s >= 2)
            sizes.append(str(big[0] if big else min(d)))
        shape = ", ".join(sizes) if sizes else "()"
        if self.dtype in ("torch.float32",):
            return f"torch.ones({shape})"
        factory = "ones" if self.dtype.startswith(("torch.float", "torch.bfloat")) else "zeros"
        return f"torch.{factory}({shape}, dtype={self.dtype})"


class Shapes:
    """Specs and integers, each question answered once."""

    def __init__(self, names: Names, values: Values) -> None:
        self.names = names
        self.values = values
        self.literals = Literals(names)
        self._ints: dict[tuple[int, int], frozenset[int] | None] = {}  # (id(node), depth) -> ints's answer
        self._specs: dict[tuple[int, int], TensorSpec | None] = {}  # (id(node), depth) -> spec's answer

    # -- integers ----------------------------------------------------------------------------
    def ints(self, f: PyFile, node: ast.AST, depth: int = 0) -> frozenset[int] | None:
        """The integer values an expression may have (loop variables over literals included)."""
        if depth > 6:
            return None
        key = (id(node), depth)  # a size passed down through helpers called from many places
        if key not in self._ints:
            self._ints[key] = self._find_ints(f, node, depth)
        return self._ints[key]

    def _find_ints(self, f: PyFile, node: ast.AST, depth: int) -> frozenset[int] | None:
        if isinstance(node, ast.Constant) and type(node.value) is int:
            return frozenset({node.value})
        if isinstance(node, ast.Name):
            found = f.scope_at(node).lookup(node.id)
            if found is None:
                return None
            _, binding = found
            out: set[int] = set()
            for it, index in binding.loops:
                values = self._iterated_ints(f, it, depth, index)
                if values is None:
                    return None
                out |= values
            for value in binding.values:
                if value is None:
                    if binding.loops:
                        continue
                    return None
                got = self.ints(f, value, depth + 1)
                if got is None:
                    return None
                out |= got
            if binding.param_of is not None:
                for alt in self.values.param_values(f, binding.param_of, node.id, depth):
                    if not isinstance(alt, tuple) or len(alt) != 2:
                        return None
                    got = self.ints(alt[0], alt[1], depth + 1)
                    if got is None:
                        return None
                    out |= got
            if binding.imports and not (binding.values or binding.loops or binding.defs or binding.param_of):
                found = self.literals.global_value(f, node)  # `from config import DIM`
                return self.ints(found[0], found[1], depth + 1) if found is not None else None
            if binding.imports or binding.defs:
                return None
            return frozenset(out) if out and len(out) <= _MAX_SIZES else None
        if isinstance(node, ast.Attribute):  # `config.DIM`
            found = self.literals.global_value(f, node)
            return self.ints(found[0], found[1], depth + 1) if found is not None else None
        if isinstance(node, ast.Subscript):  # `CFG["dim"]`, `SIZES[0]` of a literal bound once
            return self._item_ints(f, node, depth)
        if isinstance(node, ast.BinOp) and isinstance(node.op, (ast.Add, ast.Mult, ast.Sub, ast.FloorDiv)):
            a, b = self.ints(f, node.left, depth + 1), self.ints(f, node.right, depth + 1)
            if a is None or b is None or len(a) * len(b) > _MAX_SIZES:
                return None
            op = node.op
            return frozenset(x + y if isinstance(op, ast.Add) else x * y if isinstance(op, ast.Mult)
                             else x - y if isinstance(op, ast.Sub) else (x // y if y else 0) for x in a for y in b)
        return None

    def _item_ints(self, f: PyFile, node: ast.Subscript, depth: int) -> frozenset[int] | None:
        """The ints of ``container[key]`` where the container is a literal bound once and the key a
        constant that no code in either file stores or deletes (``cfg["dim"] = 8``) or updates."""
        key = node.slice
        if not isinstance(key, ast.Constant) or not isinstance(node.ctx, ast.Load):
            return None
        names: set[str] = set()
        found = self.literals.literal(f, node.value, names)
        if found is None:
            return None
        lf, container = found
        if any(self.literals.key_changed(g, key.value, names) for g in (f, lf)):
            return None
        if isinstance(container, ast.Dict):
            items = [v for k, v in zip(container.keys, container.values) if isinstance(k, ast.Constant) and k.value == key.value]
            if len(items) != 1 or any(k is None for k in container.keys):  # `**other` may hold the key too
                return None
            return self.ints(lf, items[0], depth + 1)
        if type(key.value) is int and -len(container.elts) <= key.value < len(container.elts) \
                and not any(isinstance(e, ast.Starred) for e in container.elts):
            return self.ints(lf, container.elts[key.value], depth + 1)
        return None

    def _iterated_ints(self, f: PyFile, it: ast.AST, depth: int, index: int | None = None) -> frozenset[int] | None:
        """The ints a loop variable takes over a literal iterable (``index``: its place in a tuple
        target, ``for a, b in ((1, 2), (3, 4))``)."""
        if isinstance(it, ast.Name):
            values = self.values.values(f, it)
            if len(values) == 1 and isinstance(values[0], tuple) and len(values[0]) == 2 and values[0][1] is not it:
                return self._iterated_ints(values[0][0], values[0][1], depth + 1, index)
            return None
        if isinstance(it, (ast.Tuple, ast.List, ast.Set)):
            out: set[int] = set()
            for elt in it.elts:
                if index is not None:
                    if not isinstance(elt, (ast.Tuple, ast.List)) or len(elt.elts) <= index:
                        return None
                    elt = elt.elts[index]
                elif isinstance(elt, (ast.Tuple, ast.List)):
                    return None  # the name is bound to a tuple, not an int
                got = self.ints(f, elt, depth + 1)
                if got is None:
                    return None
                out |= got
            return frozenset(out)
        if index is None and isinstance(it, ast.Call) and self.names.qualified(f, it.func) == "builtins.range":
            bounds = [self.ints(f, a, depth + 1) for a in it.args]
            if any(b is None or len(b) != 1 for b in bounds) or not bounds:
                return None
            values = range(*[next(iter(b)) for b in bounds])
            return frozenset(values) if 0 < len(values) <= _MAX_SIZES else None
        return None

    # -- tensors -----------------------------------------------------------------------------
    def spec(self, f: PyFile, node: ast.AST, depth: int = 0) -> TensorSpec | None:
        """The spec of a tensor-valued expression, merged over the values it may have."""
        if depth > 6:
            return None
        key = (id(node), depth)
        if key not in self._specs:
            self._specs[key] = self._find_spec(f, node, depth)
        return self._specs[key]

    def _find_spec(self, f: PyFile, node: ast.AST, depth: int) -> TensorSpec | None:
        found: TensorSpec | None = None
        alternatives = self.values.values(f, node)
        if not alternatives:
            return None
        for alt in alternatives:
            if not isinstance(alt, tuple) or len(alt) != 2:
                return None
            one = self._spec_of(alt[0], alt[1], depth + 1)
            if one is None:
                return None
            found = one if found is None else found.merged(one)
            if found is None:
                return None
        return found

    def _spec_of(self, f: PyFile, node: ast.AST, depth: int) -> TensorSpec | None:
        if isinstance(node, ast.BinOp):
            return self._elementwise(f, [node.left, node.right], depth, true_divide=isinstance(node.op, ast.Div),
                                     matmul=isinstance(node.op, ast.MatMult))
        if isinstance(node, ast.UnaryOp) and isinstance(node.op, (ast.USub, ast.UAdd, ast.Invert)):
            return self.spec(f, node.operand, depth + 1)
        if isinstance(node, ast.Compare) and len(node.ops) == 1:
            got = self._elementwise(f, [node.left, node.comparators[0]], depth)
            return TensorSpec(got.dims, "torch.bool") if got is not None else None
        if not isinstance(node, ast.Call):
            return None
        func = node.func
        name = self.names.qualified(f, func) or ""
        if name.startswith("torch.") and name.rsplit(".", 1)[-1] in _FACTORIES and name.count(".") == 1:
            return self._factory(f, node, name.rsplit(".", 1)[-1])
        if name in _LIKE and node.args:
            like = self.spec(f, node.args[0], depth + 1)
            kw = {k.arg: k.value for k in node.keywords if k.arg}
            if like is None or ("dtype" in kw and self._dtype(f, kw["dtype"]) is None):
                return None
            return TensorSpec(like.dims, self._dtype(f, kw["dtype"]) if "dtype" in kw else like.dtype)
        if name in _ELEMENTWISE_FUNCS and node.args and not node.keywords:
            return self._elementwise(f, list(node.args[:2]), depth)
        if name and not name.startswith(("torch.", "builtins.")):  # a function of the run: what it returns
            found = self.names.lookup_def(name, f.path)
            if found is not None and found[1].kind == "function":
                returns = [r.value for r in returns_of(found[1].node) if r.value is not None]
                merged: TensorSpec | None = None
                for r in returns:
                    one = self.spec(found[0], r, depth + 1)
                    merged = one if merged is None else (merged.merged(one) if one is not None else None)
                    if merged is None:
                        return None
                return merged
        if isinstance(func, ast.Attribute) and name == "":
            receiver = self.spec(f, func.value, depth + 1)
            if receiver is None:
                return None
            method = func.attr
            if method in _CASTS and not node.args:
                return TensorSpec(receiver.dims, _CASTS[method])
            if method == "to" and node.args:
                dtype = self._dtype(f, node.args[0])
                return TensorSpec(receiver.dims, dtype) if dtype else None
            if method in _SAME_SHAPE and method not in ("mul", "add", "sub", "div"):
                return receiver
            if method in ("mul", "add", "sub", "div") and len(node.args) == 1:
                return self._elementwise(f, [func.value, node.args[0]], depth, true_divide=method == "div")
            if method in ("reshape", "view") and node.args and not node.keywords:
                return self._reshaped(f, receiver, node.args)
            if method == "unsqueeze" and len(node.args) == 1:
                at = self.ints(f, node.args[0])
                if at is None or len(at) != 1:
                    return None
                i = next(iter(at))
                dims = list(receiver.dims)
                i = i if i >= 0 else len(dims) + 1 + i
                if not 0 <= i <= len(dims):
                    return None
                dims.insert(i, frozenset({1}))
                return TensorSpec(tuple(dims), receiver.dtype)
        return None

    def _reshaped(self, f: PyFile, receiver: TensorSpec, args: list[ast.AST]) -> TensorSpec | None:
        """``x.reshape(3, -1)`` / ``x.view((3, 10))`` of a tensor of known size: literal sizes, one -1."""
        if len(args) == 1 and isinstance(args[0], (ast.Tuple, ast.List)):
            args = list(args[0].elts)
        sizes = []
        for a in args:
            one = self.ints(f, a)
            if one is None or len(one) != 1:
                return None
            sizes.append(next(iter(one)))
        if not receiver.known or any(len(d) != 1 for d in receiver.dims):
            return None
        total = 1
        for d in receiver.dims:
            total *= next(iter(d))
        if sizes.count(-1) > 1 or any(x < -1 for x in sizes):
            return None
        rest = 1
        for x in sizes:
            rest *= x if x != -1 else 1
        if -1 in sizes:
            if rest == 0 or total % rest:
                return None
            sizes[sizes.index(-1)] = total // rest
        elif rest != total:
            return None
        return TensorSpec(tuple(frozenset({x}) for x in sizes), receiver.dtype)

    def _operand(self, f: PyFile, node: ast.AST, depth: int) -> TensorSpec | str | None:
        """A tensor's spec, or "int" / "float" / "bool" for a Python number, or None."""
        if isinstance(node, ast.Constant) and type(node.value) in (int, float, bool):
            return type(node.value).__name__
        if isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.USub) and isinstance(node.operand, ast.Constant) \
                and type(node.operand.value) in (int, float):
            return type(node.operand.value).__name__
        spec = self.spec(f, node, depth + 1)
        if spec is not None:
            return spec
        if self.ints(f, node) is not None:
            return "int"
        return None

    def _elementwise(self, f: PyFile, operands: list[ast.AST], depth: int, true_divide: bool = False,
                     matmul: bool = False) -> TensorSpec | None:
        """The spec of an elementwise operation (broadcasting, type promotion) over tensors and
        Python numbers; None when an operand is unknown or no operand is a tensor."""
        if depth > 6:
            return None
        parts = [self._operand(f, o, depth) for o in operands]
        if any(p is None for p in parts):
            return None
        tensors = [p for p in parts if isinstance(p, TensorSpec)]
        if not tensors:
            return None
        if matmul:
            if len(tensors) != 2 or len(tensors[0].dims) != 2 or len(tensors[1].dims) != 2:
                return None
            (a, b) = tensors
            return TensorSpec((a.dims[0], b.dims[1]), _promote(a.dtype, b.dtype))
        dims: tuple = ()
        for t in tensors:
            dims = _broadcast(dims, t.dims) if dims or t is not tensors[0] else t.dims
            if dims is None:
                return None
        dtype = tensors[0].dtype
        for t in tensors[1:]:
            dtype = _promote(dtype, t.dtype)
        if "float" in parts and not _is_float(dtype):
            dtype = "torch.float32"
        if true_divide and not _is_float(dtype):
            dtype = "torch.float32"
        return TensorSpec(dims, dtype)

    def _dtype(self, f: PyFile, node: ast.AST | None) -> str | None:
        if node is None:
            return None
        name = self.names.qualified(f, node) or ""
        if name.startswith("torch."):
            return _DTYPES.get(name.rsplit(".", 1)[-1])
        return None

    def _sizes(self, f: PyFile, args: list[ast.AST]) -> tuple[frozenset[int] | None, ...] | None:
        if len(args) == 1 and isinstance(args[0], (ast.Tuple, ast.List)):
            args = list(args[0].elts)
        if any(isinstance(a, ast.Starred) for a in args):
            return None
        return tuple(self.ints(f, a) for a in args)

    def _factory(self, f: PyFile, call: ast.Call, short: str) -> TensorSpec | None:
        kw = {k.arg: k.value for k in call.keywords if k.arg}
        dtype = self._dtype(f, kw.get("dtype")) if "dtype" in kw else None
        if "dtype" in kw and dtype is None:
            return None
        args = list(call.args)
        if short in ("randn", "rand", "zeros", "ones", "empty"):
            dims = self._sizes(f, [kw["size"]] if "size" in kw else args)
            return TensorSpec(dims, dtype or "torch.float32") if dims is not None else None
        if short == "full":
            if not args:
                return None
            dims = self._sizes(f, [args[0]])
            fill = args[1] if len(args) > 1 else kw.get("fill_value")
            default = "torch.bool" if isinstance(fill, ast.Constant) and isinstance(fill.value, bool) else (
                "torch.int64" if isinstance(fill, ast.Constant) and type(fill.value) is int else "torch.float32")
            return TensorSpec(dims, dtype or default) if dims is not None else None
        if short == "randint":
            size = kw.get("size") or next((a for a in args if isinstance(a, (ast.Tuple, ast.List))), None)
            if size is None:
                return None
            dims = self._sizes(f, [size])
            return TensorSpec(dims, dtype or "torch.int64") if dims is not None else None
        if short in ("linspace", "logspace"):
            steps = args[2] if len(args) > 2 else kw.get("steps")
            n = self.ints(f, steps) if steps is not None else None
            if n is None or len(n) != 1:
                return None
            return TensorSpec((n,), dtype or "torch.float32")
        if short == "eye":
            sizes = self._sizes(f, args[:2] if len(args) > 1 else [args[0], args[0]] if args else [])
            return TensorSpec(sizes, dtype or "torch.float32") if sizes and all(x is not None for x in sizes) else None
        if short == "arange":
            bounds = [self.ints(f, a) for a in args]
            if not bounds or any(b is None or len(b) != 1 for b in bounds):
                return None
            n = len(range(*[next(iter(b)) for b in bounds]))
            return TensorSpec((frozenset({n}),), dtype or "torch.int64")
        if short == "tensor" and args:
            data, dims = args[0], []
            while isinstance(data, (ast.List, ast.Tuple)):
                dims.append(frozenset({len(data.elts)}))
                data = data.elts[0] if data.elts else None
            if isinstance(data, ast.Constant) and isinstance(data.value, bool):
                default = "torch.bool"
            elif isinstance(data, ast.Constant) and type(data.value) is int:
                default = "torch.int64"
            elif isinstance(data, ast.Constant) and isinstance(data.value, float):
                default = "torch.float32"
            else:
                return None
            return TensorSpec(tuple(dims), dtype or default)
        return None


_ORDER = ["torch.bool", "torch.uint8", "torch.int8", "torch.int16", "torch.int32", "torch.int64", "torch.float16",
          "torch.bfloat16", "torch.float32", "torch.float64"]


def _is_float(dtype: str) -> bool:
    return dtype.startswith(("torch.float", "torch.bfloat"))


def _promote(a: str, b: str) -> str:
    """torch's type promotion between two tensors' dtypes (of the same category kind, as far as it
    matters for an example: float wins over integer, the wider wins)."""
    if a == b:
        return a
    if a in _ORDER and b in _ORDER:
        if {a, b} == {"torch.float16", "torch.bfloat16"}:
            return "torch.float32"
        return max(a, b, key=_ORDER.index)
    return a


def _broadcast(a: tuple, b: tuple) -> tuple | None:
    """Broadcast two shapes (per dim, the sets of sizes seen; None: unknown)."""
    out = []
    for i in range(1, max(len(a), len(b)) + 1):
        da = a[-i] if i <= len(a) else frozenset({1})
        db = b[-i] if i <= len(b) else frozenset({1})
        if da is None or db is None:
            if da == frozenset({1}):
                out.append(db)
            elif db == frozenset({1}):
                out.append(da)
            else:
                return None
        elif da == frozenset({1}):
            out.append(db)
        elif db == frozenset({1}) or da == db:
            out.append(da)
        else:
            return None
    return tuple(reversed(out))
