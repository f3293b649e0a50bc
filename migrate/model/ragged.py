"""Which Python decisions in the code an entry point reaches read a size that depends on tensor
data: ``if matches.size(0) == 0:`` where ``matches`` was made by ``torch.nonzero``, a boolean mask
(``idx[vals < th]``), ``unique``, ``masked_select``, ``argwhere`` or ``torch.where(cond)``, directly
or through what a function of the run returns (a helper in another file included). torch.export
stops at such a decision (``GuardOnDataDependentSymNode``: "Could not guard on data-dependent
expression"), where TorchScript took it at run time.

The typing is flow-insensitive and local: a name is ragged when any value assigned to it in its
function is; a call of a function or method of the run is ragged when one of its ``return``
values is. The rules' per-file typing (rules/_control_flow.py) answers the same question inside
one file; this one follows calls across the files of the run.
"""

from __future__ import annotations

import ast
from dataclasses import dataclass, field

from ts2export.model.files import Files
from ts2export.model.names import Names
from ts2export.model.pyfile import Def, PyFile

#: Operations whose result's shape depends on the values of their input.
RAGGED_OPS = {"nonzero", "masked_select", "unique", "unique_consecutive", "argwhere"}
#: Reads of a tensor's size as a Python value.
SIZE_READS = {"size", "numel", "nelement"}


@dataclass(eq=False)
class Ragged:
    files: Files
    names: Names
    _returns: dict[tuple[str, str], bool] = field(default_factory=dict, init=False)  # (path, qualname) -> answer
    _values: dict[tuple[str, str], dict[str, list[ast.AST]]] = field(default_factory=dict, init=False)

    def decisions(self, defs: set[tuple[str, str]]) -> tuple[str, ...]:
        """The ``if`` / ``while`` / conditional expression / ``assert`` tests among ``defs`` (the
        functions and methods an entry point reaches) that read a data-dependent size, as
        ``"path:line `test`"``."""
        found: list[str] = []
        for path, f, d in self.files.functions(defs):
            for node in _own_nodes(d.node):
                if isinstance(node, (ast.If, ast.While, ast.IfExp, ast.Assert)) and self._reads_ragged_size(f, d, node.test):
                    shown = f"{path}:{node.lineno} `{f.segment(node.test)}`"
                    if shown not in found:
                        found.append(shown)
        return tuple(found)

    # -- questions about one function ---------------------------------------------------------
    def _reads_ragged_size(self, f: PyFile, d: Def, test: ast.AST) -> bool:
        for node in ast.walk(test):
            tensor = _size_read(node)
            if tensor is not None and self._ragged(f, d, tensor, set()):
                return True
            if isinstance(node, ast.Name) and self._is_ragged_size_name(f, d, node.id):
                return True  # `n = good.size(0)`, then `if n == 0:`
        return False

    def _is_ragged_size_name(self, f: PyFile, d: Def, name: str) -> bool:
        for value in self._assigned(f, d).get(name, ()):
            for node in ast.walk(value):
                tensor = _size_read(node)
                if tensor is not None and self._ragged(f, d, tensor, set()):
                    return True
        return False

    def _ragged(self, f: PyFile, d: Def, node: ast.AST, asking: set[str]) -> bool:
        """Whether the tensor ``node`` computes has a shape that depends on tensor values."""
        if isinstance(node, ast.Name):
            if node.id in asking:
                return False
            asking = asking | {node.id}
            return any(self._ragged(f, d, v, asking) for v in self._assigned(f, d).get(node.id, ()))
        if isinstance(node, ast.Call):
            func = node.func
            short = func.attr if isinstance(func, ast.Attribute) else func.id if isinstance(func, ast.Name) else ""
            if short in RAGGED_OPS:
                return True
            if short == "where" and len(node.args) == 1 and not node.keywords:
                return True  # `torch.where(cond)`: the indices
            if isinstance(func, ast.Attribute) and short not in SIZE_READS and self._ragged(f, d, func.value, asking):
                return True  # `good.long()`, `good.squeeze(1)`
            if self._returns_ragged(f, node):
                return True
            return any(self._ragged(f, d, a, asking) for a in node.args)
        if isinstance(node, ast.Subscript):
            if self._ragged(f, d, node.value, asking):
                return True
            index = node.slice
            parts = index.elts if isinstance(index, ast.Tuple) else [index]
            return any(self._is_mask(f, d, p, 0) for p in parts)
        if isinstance(node, (ast.List, ast.Tuple)):
            return any(self._ragged(f, d, e, asking) for e in node.elts)
        if isinstance(node, ast.BinOp):
            return self._ragged(f, d, node.left, asking) or self._ragged(f, d, node.right, asking)
        if isinstance(node, ast.UnaryOp):
            return self._ragged(f, d, node.operand, asking)
        if isinstance(node, ast.Attribute) and node.attr in ("T", "mT", "data"):
            return self._ragged(f, d, node.value, asking)
        return False

    def _is_mask(self, f: PyFile, d: Def, node: ast.AST, depth: int) -> bool:
        """A boolean tensor used as an index: a comparison, ``&`` / ``|`` / ``~`` of such, ``.bool()``."""
        if depth > 4:
            return False
        if isinstance(node, ast.Compare):
            return not any(isinstance(op, (ast.Is, ast.IsNot, ast.In, ast.NotIn)) for op in node.ops)
        if isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.Invert):
            return self._is_mask(f, d, node.operand, depth + 1)
        if isinstance(node, ast.BinOp) and isinstance(node.op, (ast.BitAnd, ast.BitOr, ast.BitXor)):
            return self._is_mask(f, d, node.left, depth + 1) or self._is_mask(f, d, node.right, depth + 1)
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr == "bool":
            return True
        if isinstance(node, ast.Name):
            return any(self._is_mask(f, d, v, depth + 1) for v in self._assigned(f, d).get(node.id, ()))
        return False

    def _returns_ragged(self, f: PyFile, call: ast.Call) -> bool:
        """Whether ``call`` calls a function or method of the run whose ``return`` is ragged."""
        func = call.func
        target = None
        if isinstance(func, ast.Attribute) and isinstance(func.value, ast.Name) and func.value.id == "self":
            d = f.innermost_def(f.start(call))
            while d is not None and d.kind != "class":
                d = f.def_by_qualname.get(d.parent) if d.parent else None
            method = f.def_by_qualname.get(f"{d.qualname}.{func.attr}") if d is not None else None
            target = (f, method) if method is not None else None
        elif isinstance(func, (ast.Name, ast.Attribute)):
            target = self.names.def_of(f, func)
        if target is None or target[1].kind != "function":
            return False
        tf, td = target
        key = (tf.path, td.qualname)
        if key not in self._returns:
            self._returns[key] = False  # a recursive helper: not ragged through itself
            self._returns[key] = any(isinstance(n, ast.Return) and n.value is not None and self._ragged(tf, td, n.value, set())
                                     for n in _own_nodes(td.node))
        return self._returns[key]

    def _assigned(self, f: PyFile, d: Def) -> dict[str, list[ast.AST]]:
        """Per local name of a function, the values assigned to it (``a, b = t.min(1)``: each
        name gets the whole value)."""
        key = (f.path, d.qualname)
        if key not in self._values:
            out: dict[str, list[ast.AST]] = {}
            for node in _own_nodes(d.node):
                if isinstance(node, ast.Assign):
                    for target in node.targets:
                        for name in _names(target):
                            out.setdefault(name, []).append(node.value)
                elif isinstance(node, (ast.AnnAssign, ast.AugAssign)) and node.value is not None:
                    for name in _names(node.target):
                        out.setdefault(name, []).append(node.value)
                elif isinstance(node, ast.NamedExpr):
                    out.setdefault(node.target.id, []).append(node.value)
            self._values[key] = out
        return self._values[key]


def _names(target: ast.AST) -> list[str]:
    if isinstance(target, ast.Name):
        return [target.id]
    if isinstance(target, (ast.Tuple, ast.List)):
        return [n for e in target.elts for n in _names(e)]
    if isinstance(target, ast.Starred):
        return _names(target.value)
    return []


def _own_nodes(func: ast.AST):
    """The nodes of a function's body, not those of the functions and classes defined in it."""
    todo = list(ast.iter_child_nodes(func))
    while todo:
        node = todo.pop()
        yield node
        if not isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef, ast.Lambda)):
            todo.extend(ast.iter_child_nodes(node))


def _size_read(node: ast.AST) -> ast.AST | None:
    """The tensor whose size ``node`` reads (``t.size(0)``, ``t.shape[0]``, ``t.numel()``,
    ``len(t)``, ``t.size()[0]``), or None."""
    if isinstance(node, ast.Attribute) and node.attr == "shape":
        return node.value
    if isinstance(node, ast.Call):
        func = node.func
        if isinstance(func, ast.Attribute) and func.attr in SIZE_READS:
            return func.value
        if isinstance(func, ast.Name) and func.id == "len" and len(node.args) == 1:
            return node.args[0]
    return None
