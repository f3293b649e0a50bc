"""Shared analysis of the control-flow rules (TSX4xx): which code of an ``nn.Module`` runs under
``forward``, and which values are tensors, following TorchScript's typing rules.

TorchScript typed a scripted method this way: an unannotated argument is a ``Tensor``, an annotated
one has its annotation's type; tensor operations (``torch.*`` functions, tensor methods, operators
on tensors, submodule calls ``self.layer(x)``) return tensors; ``.shape``, ``.size()``, ``.dim()``,
``.numel()`` and ``len()`` are integers, which ``torch.export`` traces symbolically. A condition on
a tensor (or on a Python number read out of one with ``.item()`` / ``int()`` / ``float()`` /
``bool()``) depends on the data and cannot be traced; a condition on shapes and Python values can.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Callable, Iterator

import libcst as cst

# Kinds of values.
TENSOR = "tensor"  # a Tensor
OPTIONAL = "optional"  # Optional[Tensor]
DATA = "data"  # a Python scalar read out of a tensor: data-dependent
STATIC = "static"  # a Python value export can trace: shapes, ints, flags, strings
NONE = "none"  # None
UNKNOWN = "unknown"
MODULE = "module"  # a submodule held in a local name (`for layer in self.layers`)

DEPENDENT = (TENSOR, DATA)

MODULE_BASES = ("torch.nn.Module", "torch.nn.modules.module.Module", "torch.jit.ScriptModule", "torch.jit._script.ScriptModule")

# Tensor attributes and methods that give Python (shape-like) values.
_STATIC_ATTRS = {"shape", "dtype", "device", "ndim", "is_cuda", "is_cpu", "is_meta", "requires_grad", "layout",
                 "is_sparse", "is_quantized", "is_leaf", "names", "is_mkldnn", "is_nested"}
_TENSOR_ATTRS = {"T", "mT", "H", "mH", "data", "real", "imag", "grad"}
_STATIC_METHODS = {"size", "dim", "numel", "ndimension", "nelement", "stride", "is_contiguous", "is_floating_point",
                   "is_complex", "element_size", "get_device", "storage_offset", "dim_order", "is_signed",
                   "is_nonzero_size", "has_names", "is_pinned", "is_shared"}
_DATA_METHODS = {"item", "tolist", "__bool__", "__int__", "__float__"}
# torch.* functions that do not return a tensor.
_STATIC_TORCH = {"torch.numel", "torch.is_tensor", "torch.is_floating_point", "torch.is_complex", "torch.is_storage",
                 "torch.is_grad_enabled", "torch.is_inference_mode_enabled", "torch.get_default_dtype", "torch.Size",
                 "torch.device", "torch.finfo", "torch.iinfo", "torch.typename", "torch.is_autocast_enabled",
                 "torch.are_deterministic_algorithms_enabled", "torch.compiler.is_compiling",
                 "torch.compiler.is_exporting", "torch.is_nonzero"}
_STATIC_TORCH_PREFIXES = ("torch.jit.", "torch.cuda.", "torch.backends.", "torch.distributed.", "torch.get_",
                          "torch.is_", "torch.fx.", "torch._C.", "torch.accelerator.", "torch.mps.", "torch.xpu.")
_TENSOR_NAMESPACES = ("torch.nn.functional.", "torch.linalg.", "torch.fft.", "torch.special.", "torch.ops.aten.",
                      "torch.nn.init.", "torch._C._nn.", "torch._C._VariableFunctions.")
_DATA_TORCH = {"torch.equal", "torch.allclose", "torch.is_nonzero"}
# Operations whose result's shape depends on the values of their input (`nonzero`, a boolean mask,
# `unique`, ...): its sizes are data-dependent, and export cannot take a Python decision on them
# (`GuardOnDataDependentSymNode`).
RAGGED_OPS = {"nonzero", "masked_select", "unique", "unique_consecutive", "argwhere", "bincount", "repeat_interleave"}
# Reductions to one value: their result no longer has the data-dependent size.
_REDUCTIONS = {"sum", "mean", "max", "min", "amax", "amin", "all", "any", "prod", "norm", "std", "var", "count_nonzero",
               "logsumexp", "median", "item", "tolist"}
# Sizes of a tensor, read as Python values.
_SIZE_METHODS = {"size", "numel", "nelement"}

# Operations whose result may share memory with an input (views, no-op conversions, identity modules):
# torch.cond rejects a branch output that aliases an input, so such outputs get `.clone()`.
ALIASING_OPS = {
    "reshape", "view", "view_as", "flatten", "unflatten", "squeeze", "unsqueeze", "transpose", "permute", "t", "narrow",
    "select", "expand", "expand_as", "chunk", "split", "unbind", "movedim", "moveaxis", "swapaxes", "swapdims",
    "diagonal", "as_strided", "detach", "contiguous", "to", "type", "type_as", "float", "double", "half", "bfloat16",
    "int", "long", "short", "bool", "byte", "char", "cpu", "cuda", "real", "imag", "view_as_real", "view_as_complex",
    "unfold", "dropout", "alpha_dropout", "feature_alpha_dropout", "dropout1d", "dropout2d", "dropout3d", "identity",
    "broadcast_to", "atleast_1d", "atleast_2d", "atleast_3d", "ravel", "hsplit", "vsplit", "dsplit", "tensor_split",
    "indices", "values", "adjoint", "conj", "resolve_conj", "resolve_neg", "positive", "align_to", "rename",
    "refine_names", "as_subclass", "requires_grad_", "split_with_sizes", "squeeze_", "unsqueeze_", "coalesce",
    "align_as", "matrix_H", "mH", "mT", "T", "H", "numpy", "data", "hflip", "expand_copy",
}
# nn modules whose forward may return its input as it is.
ALIASING_MODULES = {"Identity", "Dropout", "Dropout1d", "Dropout2d", "Dropout3d", "AlphaDropout", "FeatureAlphaDropout",
                    "Flatten", "Unflatten", "Sequential", "ModuleList", "ModuleDict"}


def code_of(node: cst.CSTNode) -> str:
    return cst.Module(body=[]).code_for_node(node)


def dotted(node: cst.BaseExpression) -> str | None:
    """`a.b.c` for a chain of names, else None."""
    if isinstance(node, cst.Name):
        return node.value
    if isinstance(node, cst.Attribute):
        base = dotted(node.value)
        return f"{base}.{node.attr.value}" if base else None
    return None


def self_attr(node: cst.BaseExpression, self_name: str | None) -> str | None:
    """`attr` for `self.attr`, else None."""
    if (self_name and isinstance(node, cst.Attribute) and isinstance(node.value, cst.Name)
            and node.value.value == self_name):
        return node.attr.value
    return None


@dataclass
class ModuleInfo:
    """What the class tells about `self`: tensors (buffers, parameters), submodules, methods."""

    tensors: set[str] = field(default_factory=set)
    statics: set[str] = field(default_factory=set)
    submodules: dict[str, str] = field(default_factory=dict)  # attr -> qualified name of its class (or "")
    methods: dict[str, cst.FunctionDef] = field(default_factory=dict)


@dataclass
class Scope:
    """One function: its parameters and the kinds of its local names (flow-insensitive)."""

    func: cst.FunctionDef
    self_name: str | None
    kinds: dict[str, str]
    params: set[str]
    parent: "Scope | None" = None
    values: dict[str, list] = field(default_factory=dict)  # name -> the values assigned to it

    def values_of(self, name: str) -> list | None:
        scope: Scope | None = self
        while scope is not None:
            if name in scope.kinds:
                return scope.values.get(name, [])
            scope = scope.parent
        return None

    def lookup(self, name: str) -> str | None:
        scope: Scope | None = self
        while scope is not None:
            if name in scope.kinds:
                return scope.kinds[name]
            scope = scope.parent
        return None

    def is_local(self, name: str) -> bool:
        return name in self.kinds


def annotation_kind(annotation: cst.Annotation | None, qualname: Callable[[cst.CSTNode], set[str]]) -> str:
    if annotation is None:
        return TENSOR
    ann = annotation.annotation
    text = code_of(ann).replace(" ", "")
    if isinstance(ann, (cst.SimpleString, cst.ConcatenatedString)):
        text = text.strip("'\"")
    names = qualname(ann)
    if text in ("Tensor", "torch.Tensor") or "torch.Tensor" in names or "torch._tensor.Tensor" in names:
        return TENSOR
    if text in ("Optional[Tensor]", "Optional[torch.Tensor]", "Tensor|None", "torch.Tensor|None",
                "typing.Optional[Tensor]", "typing.Optional[torch.Tensor]", "None|Tensor", "None|torch.Tensor"):
        return OPTIONAL
    if text in ("int", "float", "bool", "str", "complex", "torch.dtype", "torch.device"):
        return STATIC
    return UNKNOWN


def tuple_kinds(annotation: cst.Annotation, n: int, qualname: Callable[[cst.CSTNode], set[str]]) -> list[str] | None:
    """Element kinds of a `Tuple[Tensor, Tensor]` return annotation with `n` elements."""
    ann = annotation.annotation
    if not isinstance(ann, cst.Subscript) or dotted(ann.value) not in ("Tuple", "tuple", "typing.Tuple"):
        return None
    if len(ann.slice) != n:
        return None
    kinds = []
    for element in ann.slice:
        if not isinstance(element.slice, cst.Index):
            return None
        kinds.append(annotation_kind(cst.Annotation(element.slice.value), qualname))
    return kinds


def join(a: str | None, b: str) -> str:
    """The kind of a name assigned both kinds. TorchScript gives a variable one type (a `None` start
    makes it Optional), so a kind this analysis could not tell does not unsettle a known one."""
    if a is None or a == b or a == UNKNOWN:
        return b
    if b == UNKNOWN:
        return a
    if {a, b} == {TENSOR, NONE} or {a, b} == {OPTIONAL, NONE} or {a, b} == {TENSOR, OPTIONAL}:
        return OPTIONAL
    return UNKNOWN


def assigned_names(target: cst.BaseExpression) -> Iterator[cst.Name]:
    if isinstance(target, cst.Name):
        yield target
    elif isinstance(target, (cst.Tuple, cst.List)):
        for el in target.elements:
            yield from assigned_names(el.value)
    elif isinstance(target, cst.StarredElement):
        yield from assigned_names(target.value)


def walk_statements(body: cst.BaseSuite | list, into_functions: bool = False) -> Iterator[cst.CSTNode]:
    """Every statement and small statement in a block, depth first, in source order."""
    stmts = body.body if isinstance(body, (cst.IndentedBlock, cst.SimpleStatementSuite)) else body
    for stmt in stmts:
        yield stmt
        if isinstance(stmt, cst.SimpleStatementLine):
            yield from stmt.body
        elif isinstance(stmt, cst.FunctionDef):
            if into_functions:
                yield from walk_statements(stmt.body, into_functions)
        elif isinstance(stmt, cst.ClassDef):
            continue
        else:
            for suite in child_suites(stmt):
                yield from walk_statements(suite, into_functions)


def child_suites(stmt: cst.CSTNode) -> list[cst.BaseSuite]:
    out: list[cst.BaseSuite] = []
    if isinstance(stmt, cst.If):
        out.append(stmt.body)
        if isinstance(stmt.orelse, cst.If):
            out.append(cst.IndentedBlock(body=[stmt.orelse]))
        elif isinstance(stmt.orelse, cst.Else):
            out.append(stmt.orelse.body)
    elif isinstance(stmt, (cst.For, cst.While)):
        out.append(stmt.body)
        if stmt.orelse is not None:
            out.append(stmt.orelse.body)
    elif isinstance(stmt, cst.With):
        out.append(stmt.body)
    elif isinstance(stmt, cst.Try):
        out.append(stmt.body)
        out.extend(h.body for h in stmt.handlers)
        if stmt.orelse is not None:
            out.append(stmt.orelse.body)
        if stmt.finalbody is not None:
            out.append(stmt.finalbody.body)
    return out


def small_targets(small: cst.CSTNode) -> list[cst.Name]:
    """Names a small statement (or compound header) binds."""
    if isinstance(small, cst.Assign):
        return [n for t in small.targets for n in assigned_names(t.target)]
    if isinstance(small, (cst.AnnAssign, cst.AugAssign)):
        return list(assigned_names(small.target))
    if isinstance(small, cst.For):
        return list(assigned_names(small.target))
    if isinstance(small, cst.With):
        return [n for item in small.items if item.asname for n in assigned_names(item.asname.name)]
    return []


class Analyzer:
    """Typing of expressions inside the methods of one nn.Module class."""

    def __init__(self, qualname: Callable[[cst.CSTNode], set[str]], module: ModuleInfo) -> None:
        self.qualname = qualname
        self.module = module
        self.functions: dict[str, cst.FunctionDef] = {}  # the file's functions whose return annotation types a call
        self._returns: dict[str, str] = {}
        self._unpacking: set[str] = set()
        self._ragged_names: set[str] = set()  # names being asked about (see ragged)

    # -- scopes ---------------------------------------------------------------------------------
    def scope(self, func: cst.FunctionDef, parent: Scope | None, is_method: bool) -> Scope:
        kinds: dict[str, str] = {}
        params: set[str] = set()
        all_params = list(func.params.posonly_params) + list(func.params.params) + list(func.params.kwonly_params)
        self_name = parent.self_name if parent else None
        for i, p in enumerate(all_params):
            name = p.name.value
            params.add(name)
            if is_method and i == 0:
                self_name = name
                kinds[name] = UNKNOWN
                continue
            kind = annotation_kind(p.annotation, self.qualname)
            if p.annotation is None and p.default is not None:
                default = p.default
                if isinstance(default, cst.Name) and default.value == "None":
                    kind = OPTIONAL
                elif isinstance(default, (cst.Integer, cst.Float, cst.SimpleString, cst.ConcatenatedString,
                                          cst.Imaginary, cst.UnaryOperation)) or (
                        isinstance(default, cst.Name) and default.value in ("True", "False")):
                    kind = STATIC
                else:
                    kind = UNKNOWN
            kinds[name] = kind
        for star in (func.params.star_arg, func.params.star_kwarg):
            if isinstance(star, cst.Param):
                params.add(star.name.value)
                kinds[star.name.value] = UNKNOWN
        scope = Scope(func, self_name, kinds, params, parent)
        # (names, value, unpacked, kind fixed by an annotation)
        assignments: list[tuple[list[str], cst.BaseExpression | None, bool, str | None]] = []
        for node in walk_statements(func.body):
            if isinstance(node, cst.Assign):
                for t in node.targets:
                    unpack = not isinstance(t.target, cst.Name)
                    assignments.append(([n.value for n in assigned_names(t.target)], node.value, unpack, None))
            elif isinstance(node, cst.AnnAssign):
                ann = annotation_kind(node.annotation, self.qualname)
                fixed = ann if ann != UNKNOWN else None
                assignments.append(([n.value for n in assigned_names(node.target)], node.value, False, fixed))
            elif isinstance(node, cst.AugAssign):
                value = cst.BinaryOperation(node.target, cst.Add(), node.value)
                assignments.append(([n.value for n in assigned_names(node.target)], value, False, None))
            elif isinstance(node, cst.For) and isinstance(node.target, cst.Name) and \
                    self_attr(node.iter, self_name) in self.module.submodules:
                assignments.append(([node.target.value], None, False, MODULE))  # for layer in self.layers
            elif isinstance(node, (cst.For, cst.With)):
                assignments.append(([n.value for n in small_targets(node)], None, True, None))
            elif isinstance(node, (cst.FunctionDef, cst.ClassDef)):
                assignments.append(([node.name.value], None, False, STATIC))
        for names, value, unpack, _fixed in assignments:
            if value is not None and not unpack and len(names) == 1:
                scope.values.setdefault(names[0], []).append(value)
        # Flow-insensitive: iterate to a fixpoint over the assignments.
        for _ in range(6):
            previous = dict(kinds)
            computed: dict[str, str] = {n: k for n, k in kinds.items() if n in params}
            scope.kinds = {**previous, **computed}
            for names, value, unpack, fixed in assignments:
                for n in names:
                    if fixed is not None:
                        kind = fixed
                    elif value is None:
                        kind = UNKNOWN
                    elif unpack:
                        parts = self.unpacked(value, len(names), scope)
                        kind = parts[names.index(n)] if parts else UNKNOWN
                    else:
                        kind = self.kind(value, scope)
                    if n in params and computed.get(n) in (STATIC, UNKNOWN):
                        continue
                    computed[n] = join(computed[n], kind) if n in computed else kind
                    scope.kinds[n] = computed[n]
            kinds = computed
            scope.kinds = kinds
            if kinds == previous:
                break
        return scope

    def unpacked(self, value: cst.BaseExpression, n: int, scope: Scope) -> list[str] | None:
        """Kinds of the `n` names that `a, b = value` binds (None: cannot tell)."""
        if isinstance(value, (cst.Tuple, cst.List)) and len(value.elements) == n:
            if any(isinstance(e, cst.StarredElement) for e in value.elements):
                return None
            return [self.kind(e.value, scope) for e in value.elements]
        if isinstance(value, cst.Call) and self._splits(value) and self.kind(value, scope) == TENSOR:
            return [TENSOR] * n
        if isinstance(value, cst.Call):
            attr = self_attr(value.func, scope.self_name)
            if attr in self.module.methods:
                func = self.module.methods[attr]
                if func.returns is not None:
                    return tuple_kinds(func.returns, n, self.qualname)
                if attr in self._unpacking:  # recursion
                    return None
                self._unpacking.add(attr)
                try:
                    inner = self.scope(func, None, True)
                    found = [self.unpacked(r.value, n, inner) for r in walk_statements(func.body)
                             if isinstance(r, cst.Return) and r.value is not None]
                finally:
                    self._unpacking.discard(attr)
                if found and all(f == found[0] for f in found):
                    return found[0]
        return None

    @staticmethod
    def _splits(call: cst.Call) -> bool:
        func = call.func
        return isinstance(func, cst.Attribute) and func.attr.value in ("chunk", "split", "unbind", "tensor_split")

    # -- expressions ----------------------------------------------------------------------------
    def kind(self, node: cst.BaseExpression, scope: Scope) -> str:
        if isinstance(node, cst.Name):
            if node.value in ("True", "False"):
                return STATIC
            if node.value == "None":
                return NONE
            found = scope.lookup(node.value)
            return found if found is not None else UNKNOWN
        if isinstance(node, (cst.Integer, cst.Float, cst.Imaginary, cst.SimpleString, cst.ConcatenatedString,
                             cst.FormattedString)):
            return STATIC
        if isinstance(node, cst.Attribute):
            attr = self_attr(node, scope.self_name)
            if attr is not None:
                if attr == "training":
                    return STATIC
                if attr in self.module.tensors:
                    return TENSOR
                if attr in self.module.statics:
                    return STATIC
                return UNKNOWN
            base = self.kind(node.value, scope)
            if base in (TENSOR,):
                if node.attr.value == "shape" and self.ragged(node.value, scope):
                    return DATA  # the size of `torch.nonzero(...)`, of `x[mask]`, ...
                if node.attr.value in _STATIC_ATTRS:
                    return STATIC
                if node.attr.value in _TENSOR_ATTRS:
                    return TENSOR
            if self._torch(node) and not self._torch(node).startswith("torch.Tensor"):
                return STATIC  # torch.float32 and the like
            return UNKNOWN
        if isinstance(node, cst.Subscript):
            base = self.kind(node.value, scope)
            return base if base in (TENSOR, STATIC, DATA) else UNKNOWN
        if isinstance(node, cst.Call):
            return self._call_kind(node, scope)
        if isinstance(node, cst.BinaryOperation):
            return self._combine([self.kind(node.left, scope), self.kind(node.right, scope)])
        if isinstance(node, cst.UnaryOperation):
            inner = self.kind(node.expression, scope)
            if isinstance(node.operator, cst.Not):
                return DATA if inner in DEPENDENT else (STATIC if inner in (STATIC, NONE, OPTIONAL) else UNKNOWN)
            return inner
        if isinstance(node, cst.Comparison):
            ops = [c.operator for c in node.comparisons]
            if all(isinstance(o, (cst.Is, cst.IsNot)) for o in ops):
                return STATIC
            if any(isinstance(o, (cst.Is, cst.IsNot, cst.In, cst.NotIn)) for o in ops):
                return UNKNOWN
            operands = [node.left] + [c.comparator for c in node.comparisons]
            if any(isinstance(o, (cst.SimpleString, cst.ConcatenatedString, cst.FormattedString)) for o in operands):
                return STATIC
            kinds = [self.kind(o, scope) for o in operands]
            combined = self._combine(kinds)
            if combined == TENSOR and len(ops) > 1:
                return DATA  # `a < t < b` is `(a < t) and (t < b)`: Python truth of tensors
            return combined
        if isinstance(node, cst.BooleanOperation):
            kinds = [self.kind(node.left, scope), self.kind(node.right, scope)]
            if any(k in DEPENDENT for k in kinds):
                return DATA
            return STATIC if all(k in (STATIC, NONE) for k in kinds) else UNKNOWN
        if isinstance(node, cst.IfExp):
            a, b = self.kind(node.body, scope), self.kind(node.orelse, scope)
            return a if a == b else join(a, b)
        return UNKNOWN

    @staticmethod
    def _combine(kinds: list[str]) -> str:
        if TENSOR in kinds:
            return TENSOR
        if DATA in kinds:
            return DATA
        if all(k == STATIC for k in kinds):
            return STATIC
        return UNKNOWN

    def _torch(self, node: cst.CSTNode) -> str | None:
        if not isinstance(node, cst.Name) and dotted(node) is None:
            return None  # `torch.isnan(x).any` is a method of a tensor, not a torch name
        for q in sorted(self.qualname(node)):
            if q == "torch" or q.startswith("torch."):
                return q
        return None

    def _call_kind(self, node: cst.Call, scope: Scope) -> str:
        func = node.func
        args = [a.value for a in node.args]
        if isinstance(func, cst.Name) and scope.lookup(func.value) == MODULE:
            return TENSOR
        if isinstance(func, cst.Name) and scope.lookup(func.value) is None:
            name = func.value
            if name in ("int", "float", "bool", "complex"):
                if not args:
                    return STATIC
                k = self.kind(args[0], scope)
                return DATA if k in DEPENDENT else (STATIC if k == STATIC else UNKNOWN)
            if name == "len" and args and self.ragged(args[0], scope):
                return DATA
            if name in ("len", "isinstance", "hasattr", "str", "repr", "type", "callable", "getattr"):
                return STATIC
            if name in self.functions and self.functions[name].returns is not None:
                return annotation_kind(self.functions[name].returns, self.qualname)
            if name in self.functions and returns_ragged(self, self.functions[name], False):
                return TENSOR  # an unannotated helper returning what `nonzero` made
            if name in ("abs", "max", "min", "round", "sum"):
                ks = [self.kind(a, scope) for a in args]
                return DATA if any(k in DEPENDENT for k in ks) else (STATIC if ks and all(k == STATIC for k in ks) else UNKNOWN)
        q = self._torch(func)
        if q is not None:
            if q in _DATA_TORCH:
                return DATA
            if q in _STATIC_TORCH or q.startswith(_STATIC_TORCH_PREFIXES):
                return STATIC
            if q.startswith("torch.nn.") and not q.startswith("torch.nn.functional."):
                return UNKNOWN  # constructing a module
            if q.startswith("torch.Tensor."):
                return self._method_kind(q.rsplit(".", 1)[1])
            if q.count(".") == 1 or q.startswith(_TENSOR_NAMESPACES):
                return TENSOR  # torch.cat, F.relu, torch.linalg.norm, ...
            return UNKNOWN  # helpers deeper in torch (torch.ao..., torch.utils...) may return anything
        if isinstance(func, cst.Attribute):
            attr = self_attr(func, scope.self_name)
            if attr is not None:
                if attr in self.module.methods:
                    return self.method_return_kind(attr)
                if attr in self.module.tensors or attr in self.module.statics:
                    return UNKNOWN
                return TENSOR  # submodule call
            base = self.kind(func.value, scope)
            if base == TENSOR:
                if func.attr.value in _SIZE_METHODS and self.ragged(func.value, scope):
                    return DATA
                return self._method_kind(func.attr.value)
            if base == DATA and func.attr.value in ("item",):
                return DATA
        return UNKNOWN

    def ragged(self, node: cst.BaseExpression, scope: Scope) -> bool:
        """Whether a tensor's shape depends on its values: made by `torch.nonzero`, `masked_select`,
        `unique`, a boolean mask (`x[x > 0]`), ..., or computed elementwise from one."""
        if isinstance(node, cst.Name):
            values = scope.values_of(node.value)
            if not values or node.value in self._ragged_names:
                return False
            self._ragged_names.add(node.value)  # recursion guard (flow-insensitive bindings)
            try:
                return any(self.ragged(v, scope) for v in values)
            finally:
                self._ragged_names.discard(node.value)
        if isinstance(node, cst.Call):
            func = node.func
            args = [a.value for a in node.args if a.keyword is None]
            q = self._torch(func)
            short = q.rsplit(".", 1)[1] if q else (func.attr.value if isinstance(func, cst.Attribute) else "")
            if short in _REDUCTIONS:
                dims = args[1:] if q is not None else args
                if not dims and not any(a.keyword is not None and a.keyword.value == "dim" for a in node.args):
                    return False  # `t.sum()`, `torch.sum(t)`: one value
            if short == "where":
                return q is not None and len(node.args) == 1  # `torch.where(cond)`: the indices
            if short in RAGGED_OPS and (q is not None or self.kind(func.value, scope) == TENSOR):
                return True
            if isinstance(func, cst.Attribute) and q is None and self.kind(func.value, scope) == TENSOR:
                return self.ragged(func.value, scope) or any(self.ragged(a, scope) for a in args)
            helper = helper_of(self, func, scope)
            if helper is not None and returns_ragged(self, helper, isinstance(func, cst.Attribute)):
                return True  # `matches = _mutual(dists)`, whose `return` is made by `nonzero`
            return any(self.ragged(a, scope) for a in args)
        if isinstance(node, (cst.List, cst.Tuple)):  # `torch.stack([src, dst])`, `torch.cat((a, b[m]))`
            return any(not isinstance(e, cst.StarredElement) and self.ragged(e.value, scope) for e in node.elements)
        if isinstance(node, cst.Subscript):
            if self.ragged(node.value, scope):
                return True
            for element in node.slice:
                index = element.slice.value if isinstance(element.slice, cst.Index) else None
                if index is not None and self.kind(index, scope) == TENSOR and self._is_mask(index, scope):
                    return True
            return False
        if isinstance(node, cst.BinaryOperation):
            return self.ragged(node.left, scope) or self.ragged(node.right, scope)
        if isinstance(node, (cst.UnaryOperation,)):
            return self.ragged(node.expression, scope)
        if isinstance(node, cst.Attribute) and node.attr.value in _TENSOR_ATTRS:
            return self.ragged(node.value, scope)
        return False

    def ragged_size(self, node: cst.BaseExpression, scope: Scope) -> cst.BaseExpression | None:
        """The tensor whose data-dependent size ``node`` reads (``t.shape[0]``, ``t.size(0)``,
        ``t.numel()``, ``len(t)`` of a ragged ``t``), if it is one."""
        if isinstance(node, cst.Subscript):
            node = node.value
        if isinstance(node, cst.Attribute) and node.attr.value == "shape" and self.ragged(node.value, scope):
            return node.value
        if isinstance(node, cst.Call):
            func = node.func
            if isinstance(func, cst.Attribute) and func.attr.value in _SIZE_METHODS and self.ragged(func.value, scope):
                return func.value
            if isinstance(func, cst.Name) and func.value == "len" and node.args and self.ragged(node.args[0].value, scope):
                return node.args[0].value
        return None

    def _is_mask(self, node: cst.BaseExpression, scope: Scope, depth: int = 0) -> bool:
        """A boolean tensor: a comparison of tensors, or `&`, `|`, `~` of such (through names)."""
        if depth > 4:
            return False
        if isinstance(node, cst.Comparison):
            return True
        if isinstance(node, cst.UnaryOperation) and isinstance(node.operator, cst.BitInvert):
            return self._is_mask(node.expression, scope, depth + 1)
        if isinstance(node, cst.BinaryOperation) and isinstance(node.operator, (cst.BitAnd, cst.BitOr, cst.BitXor)):
            return self._is_mask(node.left, scope, depth + 1) or self._is_mask(node.right, scope, depth + 1)
        if isinstance(node, cst.Call) and isinstance(node.func, cst.Attribute) and node.func.attr.value == "bool":
            return True
        if isinstance(node, cst.Name):
            return any(self._is_mask(v, scope, depth + 1) for v in scope.values_of(node.value) or [])
        return False

    @staticmethod
    def _method_kind(name: str) -> str:
        if name in _STATIC_METHODS:
            return STATIC
        if name in _DATA_METHODS:
            return DATA
        return TENSOR

    def method_return_kind(self, name: str) -> str:
        if name in self._returns:
            return self._returns[name]
        self._returns[name] = UNKNOWN  # recursion guard
        func = self.module.methods[name]
        kind = UNKNOWN
        if func.returns is not None:
            kind = annotation_kind(func.returns, self.qualname)
        else:
            scope = self.scope(func, None, True)
            kinds = [self.kind(n.value, scope) if n.value is not None else NONE
                     for n in walk_statements(func.body) if isinstance(n, cst.Return)]
            if kinds and all(k == kinds[0] for k in kinds):
                kind = kinds[0]
        self._returns[name] = kind
        return kind

    # -- aliasing -------------------------------------------------------------------------------
    def fresh(self, node: cst.BaseExpression, scope: Scope) -> bool:
        """True when `node` surely makes a new tensor (no view or pass-through of an input)."""
        if isinstance(node, (cst.BinaryOperation, cst.Comparison)):
            return True
        if isinstance(node, cst.UnaryOperation):
            return not isinstance(node.operator, cst.Plus)
        if not isinstance(node, cst.Call):
            return False
        func = node.func
        q = self._torch(func)
        if q is not None:
            return q.rsplit(".", 1)[1] not in ALIASING_OPS and self.kind(node, scope) == TENSOR
        if isinstance(func, cst.Attribute):
            attr = self_attr(func, scope.self_name)
            if attr is not None:
                if attr in self.module.methods:
                    return False
                cls = self.module.submodules.get(attr, "")
                return cls.startswith("torch.nn.") and cls.rsplit(".", 1)[1] not in ALIASING_MODULES
            if self.kind(func.value, scope) == TENSOR:
                return func.attr.value not in ALIASING_OPS and self._method_kind(func.attr.value) == TENSOR
        return False


def helper_of(analyzer: Analyzer, func: cst.BaseExpression, scope: Scope) -> cst.FunctionDef | None:
    """The function of the file (``helper(...)``) or method of the module (``self.helper(...)``)
    that a call calls, if it is one."""
    if isinstance(func, cst.Name) and scope.lookup(func.value) is None:
        return analyzer.functions.get(func.value)
    if isinstance(func, cst.Attribute) and isinstance(func.value, cst.Name) and scope.self_name is not None \
            and func.value.value == scope.self_name:
        return analyzer.module.methods.get(func.attr.value)
    return None


def returns_ragged(analyzer: Analyzer, func: cst.FunctionDef, is_method: bool) -> bool:
    """Whether a helper returns a tensor whose shape depends on its data (any of its ``return``
    values, or an item of a returned tuple)."""
    key = f"<returns>{id(func)}"
    if key in analyzer._ragged_names or len(analyzer._ragged_names) > 40:
        return False
    analyzer._ragged_names.add(key)
    try:
        inner = analyzer.scope(func, None, is_method)
        return any(isinstance(node, cst.Return) and node.value is not None and analyzer.ragged(node.value, inner)
                   for node in walk_statements(func.body))
    finally:
        analyzer._ragged_names.discard(key)


def module_info(cls: cst.ClassDef, qualname: Callable[[cst.CSTNode], set[str]]) -> ModuleInfo:
    info = ModuleInfo()
    for stmt in cls.body.body:
        if isinstance(stmt, cst.FunctionDef):
            info.methods[stmt.name.value] = stmt
    init = info.methods.get("__init__")
    if init is None:
        return info
    params = list(init.params.params)
    if not params:
        return info
    self_name = params[0].name.value

    def torch_name(node: cst.CSTNode) -> str:
        for q in sorted(qualname(node)):
            if q.startswith("torch."):
                return q
        return ""

    for node in walk_statements(init.body):
        if isinstance(node, cst.Call):
            continue
        if isinstance(node, cst.Expr) and isinstance(node.value, cst.Call):
            call = node.value
            func = call.func
            if (isinstance(func, cst.Attribute) and func.attr.value in ("register_buffer", "register_parameter")
                    and call.args and isinstance(call.args[0].value, cst.SimpleString)):
                info.tensors.add(call.args[0].value.evaluated_value)
            elif isinstance(func, cst.Attribute) and func.attr.value == "add_module" and call.args and isinstance(
                    call.args[0].value, cst.SimpleString):
                info.submodules[call.args[0].value.evaluated_value] = ""
        targets: list[cst.BaseExpression] = []
        value = None
        if isinstance(node, cst.Assign):
            targets, value = [t.target for t in node.targets], node.value
        elif isinstance(node, cst.AnnAssign) and node.value is not None:
            targets, value = [node.target], node.value
        for target in targets:
            attr = self_attr(target, self_name)
            if attr is None or value is None:
                continue
            if isinstance(value, cst.Call):
                q = torch_name(value.func)
                if q in ("torch.nn.Parameter", "torch.nn.parameter.Parameter", "torch.nn.Buffer",
                         "torch.nn.parameter.Buffer"):
                    info.tensors.add(attr)
                elif q.startswith("torch.nn.") and not q.startswith("torch.nn.functional.") and q.rsplit(".", 1)[1][:1].isupper():
                    info.submodules[attr] = q
                elif q in _STATIC_TORCH or q.startswith(_STATIC_TORCH_PREFIXES):
                    info.statics.add(attr)  # torch.device(...), torch.Size(...) and the like
                elif q.startswith("torch.") and not q.startswith("torch.nn.") and q[6:7].islower():
                    info.tensors.add(attr)
                else:
                    info.submodules.setdefault(attr, "")
            elif isinstance(value, (cst.Integer, cst.Float, cst.SimpleString, cst.ConcatenatedString)) or (
                    isinstance(value, cst.Name) and value.value in ("True", "False")):
                info.statics.add(attr)
            elif isinstance(value, cst.UnaryOperation) and isinstance(value.expression, (cst.Integer, cst.Float)):
                info.statics.add(attr)
    info.tensors -= set(info.submodules)
    return info


def names_in(node: cst.CSTNode) -> list[cst.Name]:
    """Every Name node under `node` (loads and stores), in source order."""
    found: list[cst.Name] = []

    class _V(cst.CSTVisitor):
        def visit_Name(self, n: cst.Name) -> None:
            found.append(n)

        def visit_Attribute(self, n: cst.Attribute) -> bool:
            n.value.visit(self)
            return False

        def visit_Arg(self, n: cst.Arg) -> bool:
            n.value.visit(self)
            return False

        def visit_Param(self, n: cst.Param) -> bool:
            if n.default is not None:
                n.default.visit(self)
            return False

    node.visit(_V())
    return found


def is_builtin_call(call: cst.Call, name: str, scope: Scope) -> bool:
    return isinstance(call.func, cst.Name) and call.func.value == name and scope.lookup(name) is None
