"""What a program shows about the inputs of its TorchScript entry points (see also
ts2export.artifact.inputs: the inputs files that `verify` and `convert` read).

``torch.jit.script(model)`` compiled without inputs; ``torch.export`` needs example inputs, and a
trace's example fixes the sizes export may specialize. Programs nearly always show their inputs
somewhere, just not at the entry point: on the artifact loaded back from the path it was saved to
(in this file or in the serving code), on the scripted object called later, on the model a factory
returned, or in the repository's tests, which call the model class. This module reads those calls
(the program model's units and value tracking) and the tensors passed to them, statically:

- a tensor's *spec*: its rank, the sizes each dimension is seen at (``torch.rand(n, 3, 28, 28)``
  inside ``for n in (1, 3, 5)`` is seen at 1, 3 and 5 in dimension 0) and its dtype;
- for each entry point, the specs of its inputs merged over every call found: the example code
  to export with (tensors of those shapes and dtypes, made with ``torch.ones``/``torch.zeros``,
  which leave the random number generator alone) and the dimensions seen at several sizes
  (exported dynamic).
"""

from __future__ import annotations

import ast
import os
from dataclasses import dataclass
from typing import TYPE_CHECKING

from ts2export.pyindex import PyFile, first_arg, returns_of

if TYPE_CHECKING:  # pragma: no cover
    from ts2export.program import Program, Site

_FACTORIES = {"randn", "rand", "zeros", "ones", "empty", "randint", "full", "tensor", "arange"}
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


class InputFinder:
    """Reads, for each entry point, the calls that feed its module and the tensors they pass."""

    def __init__(self, program: "Program") -> None:
        self.program = program
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
                for alt in self.program._param_values(f, binding.param_of, node.id, depth):
                    if not isinstance(alt, tuple) or len(alt) != 2:
                        return None
                    got = self.ints(alt[0], alt[1], depth + 1)
                    if got is None:
                        return None
                    out |= got
            if binding.imports or binding.defs:
                return None
            return frozenset(out) if out and len(out) <= _MAX_SIZES else None
        if isinstance(node, ast.BinOp) and isinstance(node.op, (ast.Add, ast.Mult, ast.Sub, ast.FloorDiv)):
            a, b = self.ints(f, node.left, depth + 1), self.ints(f, node.right, depth + 1)
            if a is None or b is None or len(a) * len(b) > _MAX_SIZES:
                return None
            op = node.op
            return frozenset(x + y if isinstance(op, ast.Add) else x * y if isinstance(op, ast.Mult)
                             else x - y if isinstance(op, ast.Sub) else (x // y if y else 0) for x in a for y in b)
        return None

    def _iterated_ints(self, f: PyFile, it: ast.AST, depth: int, index: int | None = None) -> frozenset[int] | None:
        """The ints a loop variable takes over a literal iterable (``index``: its place in a tuple
        target, ``for a, b in ((1, 2), (3, 4))``)."""
        if isinstance(it, ast.Name):
            values = self.program.values(f, it)
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
        if index is None and isinstance(it, ast.Call) and self.program.qualified(f, it.func) == "builtins.range":
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
        alternatives = self.program.values(f, node)
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
        if not isinstance(node, ast.Call):
            return None
        func = node.func
        name = self.program.qualified(f, func) or ""
        if name.startswith("torch.") and name.rsplit(".", 1)[-1] in _FACTORIES and name.count(".") == 1:
            return self._factory(f, node, name.rsplit(".", 1)[-1])
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
            if method in _SAME_SHAPE:
                return receiver
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

    def _dtype(self, f: PyFile, node: ast.AST | None) -> str | None:
        if node is None:
            return None
        name = self.program.qualified(f, node) or ""
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

    # -- calls that feed an entry point ------------------------------------------------------
    def feeding_calls(self, site: "Site") -> list[tuple[PyFile, ast.Call]]:
        """Calls of the module an entry point makes: of its result (and of the artifact loaded
        back in its unit), of the object it scripts or traces, and of instances of the class it
        compiles in the repository's tests."""
        from ts2export.program import READER

        found: list[tuple[PyFile, ast.Call]] = []
        producers = [site] + [s for s in (site.unit.sites if site.unit else []) if s.kind == READER]
        for producer in producers:
            found += self._calls_of_value(producer.file, producer.node)
        target = first_arg(site.node, "obj", "func", "mod")
        if isinstance(target, ast.Name):
            found += self._calls_of_name(site.file, target.id, site.file.scope_at(target))
        defs, _unknown = self.program.targets(site.file, target) if target is not None else (set(), True)
        for path, qualname in sorted(defs):
            found += self._test_calls(path, qualname)
        unique: dict[int, tuple[PyFile, ast.Call]] = {}
        for f, call in found:
            unique.setdefault(id(call), (f, call))
        return list(unique.values())

    def _stores_of(self, f: PyFile, value: ast.AST) -> list[ast.AST]:
        """Targets that ``value`` (or ``value.eval()`` and the like) is assigned to."""
        from ts2export.program import SELF_METHODS

        out = []
        for node in f.walk():
            if isinstance(node, ast.Assign) and len(node.targets) == 1:
                v = node.value
                while isinstance(v, ast.Call) and isinstance(v.func, ast.Attribute) and v.func.attr in SELF_METHODS and v is not value:
                    v = v.func.value
                if v is value:
                    out.append(node.targets[0])
        return out

    def _calls_of_value(self, f: PyFile, value: ast.AST, depth: int = 0) -> list[tuple[PyFile, ast.Call]]:
        out: list[tuple[PyFile, ast.Call]] = []
        for target in self._stores_of(f, value):
            if isinstance(target, ast.Name):
                out += self._calls_of_name(f, target.id, f.scope_at(target))
                out += self._returned(f, target, depth)
            elif isinstance(target, ast.Attribute) and isinstance(target.value, ast.Name):
                out += self._calls_of_attribute(f, target)
        return out

    def _calls_of_name(self, f: PyFile, name: str, scope) -> list[tuple[PyFile, ast.Call]]:
        out = []
        for node in ast.walk(scope.node):
            if not isinstance(node, ast.Call):
                continue
            func = node.func
            if isinstance(func, ast.Attribute) and func.attr == "forward":
                func = func.value
            if isinstance(func, ast.Name) and func.id == name and f.scope_at(func) is scope:
                out.append((f, node))
        return out

    def _calls_of_attribute(self, f: PyFile, target: ast.Attribute) -> list[tuple[PyFile, ast.Call]]:
        """``self.model = ...``: calls of ``self.model(...)`` in the methods of the class."""
        d = f.innermost_def(f.start(target))
        while d is not None and d.kind != "class":
            d = f.def_by_qualname.get(d.parent) if d.parent else None
        if d is None:
            return []
        out = []
        for node in ast.walk(d.node):
            if isinstance(node, ast.Call):
                func = node.func
                if isinstance(func, ast.Attribute) and func.attr == "forward":
                    func = func.value
                if (isinstance(func, ast.Attribute) and func.attr == target.attr and isinstance(func.value, ast.Name)
                        and func.value.id == target.value.id):
                    out.append((f, node))
        return out

    def _returned(self, f: PyFile, target: ast.Name, depth: int) -> list[tuple[PyFile, ast.Call]]:
        """A name returned by its function: the calls of what the function's callers bind it to."""
        if depth > 2:
            return []
        scope = f.scope_at(target)
        owner = scope.qualname
        if not owner or owner not in f.def_by_qualname:
            return []
        returns = [r for r in returns_of(f.def_by_qualname[owner].node)
                   if isinstance(r.value, ast.Name) and r.value.id == target.id]
        if not returns:
            return []
        out = []
        for cf, call in self.program.calls_of(f.path, owner):
            out += self._calls_of_value(cf, call, depth + 1)
        return out

    def _test_calls(self, path: str, qualname: str) -> list[tuple[PyFile, ast.Call]]:
        """Calls of instances of a class in the run's test files (`tests/`, `test_*.py`)."""
        out = []
        for tf, call in self.program.calls_of(path, qualname):
            if not _is_test_file(tf.path):
                continue
            parent_calls = [n for n in ast.walk(tf.tree) if isinstance(n, ast.Call) and n.func is call]
            out += [(tf, c) for c in parent_calls]  # Model(...)(x)
            out += self._calls_of_value(tf, call)
        return out

    # -- merged evidence -----------------------------------------------------------------------
    def evidence(self, site: "Site") -> dict | None:
        """What the calls feeding an entry point show: plain data for the rules' view."""
        calls = self.feeding_calls(site)
        by_arity: dict[int, list[tuple[PyFile, ast.Call, list[TensorSpec | None]]]] = {}
        for f, call in calls:
            if call.keywords or any(isinstance(a, ast.Starred) for a in call.args) or not call.args:
                continue
            specs = [self.spec(f, a) for a in call.args]
            by_arity.setdefault(len(call.args), []).append((f, call, specs))
        if not by_arity:
            return None
        arity = max(by_arity, key=lambda n: len(by_arity[n]))
        rows = by_arity[arity]
        merged: list[TensorSpec | None] = []
        for i in range(arity):
            spec: TensorSpec | None = None
            for _, _, specs in rows:
                one = specs[i]
                if one is None:
                    continue
                spec = one if spec is None else spec.merged(one)
                if spec is None:
                    break
            merged.append(spec)
        where = sorted({f"{f.path}:{call.lineno}" for f, call, _ in rows})
        example = None
        if all(s is not None and s.known for s in merged):
            parts = [s.example() for s in merged]
            example = "(" + ", ".join(parts) + ("," if len(parts) == 1 else "") + ")"
        return {
            "example": example,
            "sizes": [[sorted(d) if d is not None else None for d in s.dims] if s is not None else None for s in merged],
            "where": where,
        }


def _is_test_file(path: str) -> bool:
    parts = path.replace(os.sep, "/").split("/")
    name = parts[-1]
    return "tests" in parts[:-1] or "test" in parts[:-1] or name.startswith("test_") or name.endswith("_test.py")

