"""What an expression may evaluate to, followed across the run.

Names are followed to every value they are bound to (flow-insensitively: every binding in their
scope), parameters to the arguments of their call sites (and their default), ``self.attr`` to its
assignments in the class, loop variables to the elements of the literal they iterate. The answer
is a list of alternatives: ``(file, expr)``, ``("def", file, Def)`` for a definition of the run,
``("annotated", file, annotation)`` for a parameter nothing calls (or for what a call passes it
that cannot be followed), or :data:`UNKNOWN`.
"""

from __future__ import annotations

import ast
from dataclasses import dataclass

from ts2export.model import pathpattern as ap
from ts2export.model.calls import Calls
from ts2export.model.flow import Blocks, reaches
from ts2export.model.memo import MAX_DEPTH, PathMemo
from ts2export.model.names import Names
from ts2export.model.parametrize import MAX_ENTRIES, parametrized
from ts2export.model.pyfile import PyFile
from ts2export.model.torchapi import SELF_METHODS

UNKNOWN = object()  # a value that cannot be followed


@dataclass(frozen=True)
class Env:
    """The arguments of one call of a function being followed (context for its parameters)."""

    function: tuple[str, str]  # (path, qualname)
    args: dict


class Values:
    def __init__(self, names: Names, calls: Calls) -> None:
        self.names = names
        self.calls = calls
        self._values = PathMemo([])  # values's answers (they cut cycles with the path: see ts2export.model.memo)
        self._blocks: dict[int, Blocks] = {}  # id(scope node) -> its statements' nesting (ts2export.model.flow)

    def values(self, f: PyFile, node: ast.AST, depth: int = 0, seen: frozenset = frozenset(), env: "Env | None" = None) -> list:
        """What ``node`` may evaluate to, as alternatives: ``(file, expr)``, ``("def", file, Def)``
        for a definition of the run, or :data:`UNKNOWN`. Names are followed to every value they
        are bound to, parameters to the arguments of their call sites (and their default),
        ``self.attr`` to its assignments in the class. A value met again (``m = script(m)``) adds
        nothing. ``env``: the arguments of one call of the function being followed (a factory)."""
        if depth > MAX_DEPTH:
            return [UNKNOWN]
        key = (id(node), depth, id(env) if env is not None else None)
        return list(self._values.ask(key, id(node), seen, lambda: self._find_values(f, node, depth, seen | {id(node)}, env)))

    def _find_values(self, f: PyFile, node: ast.AST, depth: int, seen: frozenset, env: "Env | None") -> list:
        if isinstance(node, ast.Name):
            found = f.scope_at(node).lookup(node.id)
            if found is None:
                return [(f, node)]
            scope, binding = found
            if env is not None and binding.param_of is not None and (f.path, binding.param_of) == env.function:
                arg = env.args.get(node.id)
                if arg is not None:
                    return self.values(arg[0], arg[1], depth + 1, seen)
            out: list = []
            for qualname in binding.defs:
                d = f.def_by_qualname.get(qualname)
                out.append(("def", f, d) if d is not None else UNKNOWN)
            for target in binding.imports:
                hit = self.names.lookup_def(target, f.path)
                out.append(("def", hit[0], hit[1]) if hit is not None else (f, node))
            values, param = self._reaching(f, scope, binding, node)
            for value in values:
                out.extend(self.values(f, value, depth + 1, seen, env) if value is not None else [UNKNOWN])
            for iterable, index in binding.loops:
                out.extend(self._iterated(f, iterable, index, depth + 1, seen, env))
            if param:
                out.extend(self.param_values(f, binding.param_of, node.id, depth, seen))
            return out
        if isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name):
            assigned = self._self_attribute(f, node, depth, seen)
            if assigned is not None:
                return assigned if assigned else [UNKNOWN]
        if isinstance(node, ast.NamedExpr):
            return self.values(f, node.value, depth + 1, seen, env)
        if isinstance(node, ast.IfExp):
            truth = self._truth(f, node.test, env, seen)
            body = self.values(f, node.body, depth + 1, seen, env) if truth is not False else []
            orelse = self.values(f, node.orelse, depth + 1, seen, env) if truth is not True else []
            return body + orelse
        if isinstance(node, ast.BoolOp):
            return [v for value in node.values for v in self.values(f, value, depth + 1, seen, env)]
        return [(f, node)]

    def _reaching(self, f: PyFile, scope, binding, use: ast.Name) -> tuple[list, bool]:
        """The assignments of ``use``'s name that may reach it, and whether its parameter does: all
        of them, unless the name is bound more than once in the scope that ``use`` is read in
        (not a closure), where the statements' nesting rules some out (ts2export.model.flow)."""
        param = binding.param_of is not None
        if len(binding.values) + param < 2 or f.scope_at(use) is not scope or scope.node is None:
            return binding.values, param
        body = getattr(scope.node, "body", None)
        if not isinstance(body, list):
            return binding.values, param
        blocks = self._blocks.get(id(scope.node))
        if blocks is None:
            blocks = self._blocks[id(scope.node)] = Blocks(body)
        kept = [v for v in binding.values if v is None or reaches(blocks, v, use, binding.values)]
        return kept, param and reaches(blocks, None, use, binding.values)

    def _iterated(self, f: PyFile, iterable: ast.AST, index: int | None, depth: int, seen: frozenset, env) -> list:
        """Values a loop variable takes: the elements of a literal list, tuple or set (through names
        and parameters), or the ``index``-th item of each when the loop unpacks tuples."""
        out: list = []
        for alt in self.values(f, iterable, depth + 1, seen, env):
            if alt is UNKNOWN or alt[0] in ("def", "annotated"):
                out.append(UNKNOWN)
                continue
            vf, expr = alt
            if not isinstance(expr, (ast.List, ast.Tuple, ast.Set)):
                out.append(UNKNOWN)
                continue
            for elt in expr.elts:
                if index is not None:
                    if not isinstance(elt, (ast.Tuple, ast.List)) or len(elt.elts) <= index:
                        out.append(UNKNOWN)
                        continue
                    elt = elt.elts[index]
                if isinstance(elt, ast.Starred):
                    out.append(UNKNOWN)
                    continue
                out.extend(self.values(vf, elt, depth + 1, seen, env))
        return out

    def _constant(self, f: PyFile, node: ast.AST, env: "Env | None", depth: int = 0, seen: frozenset = frozenset()):
        """The value of a constant expression (through names bound once and the call's
        arguments), or ``UNKNOWN``. ``seen``: the values being followed around it (a name whose
        value tests itself, ``m = m if m is not None else M()``, is not followed into itself)."""
        if depth > MAX_DEPTH:
            return UNKNOWN
        if isinstance(node, ast.Constant):
            return node.value
        if isinstance(node, ast.Name):
            values = self.values(f, node, depth + 1, seen, env=env)
            if len(values) == 1 and values[0] is not UNKNOWN and values[0][0] != "def" and values[0][1] is not node:
                return self._constant(values[0][0], values[0][1], env, depth + 1, seen)
        return UNKNOWN

    def _truth(self, f: PyFile, test: ast.AST, env: "Env | None", seen: frozenset = frozenset()) -> bool | None:
        """Whether a condition is statically true or false (None: cannot tell)."""
        if isinstance(test, ast.Compare) and len(test.ops) == 1:
            left = self._constant(f, test.left, env, seen=seen)
            right = self._constant(f, test.comparators[0], env, seen=seen)
            if left is UNKNOWN or right is UNKNOWN:
                return None
            op = test.ops[0]
            try:
                if isinstance(op, ast.Eq):
                    return left == right
                if isinstance(op, ast.NotEq):
                    return left != right
                if isinstance(op, ast.In):
                    return left in right
                if isinstance(op, ast.NotIn):
                    return left not in right
            except TypeError:
                return None
        return None

    def _self_attribute(self, f: PyFile, node: ast.Attribute, depth: int = 0, seen: frozenset = frozenset()) -> list | None:
        """Values of ``self.attr`` inside a method: its assignments in the class (None if ``node``
        is not such an attribute)."""
        d = f.innermost_def(f.start(node))
        while d is not None and d.kind != "function":
            d = f.def_by_qualname.get(d.parent) if d.parent else None
        if d is None or d.parent is None:
            return None
        cls = f.def_by_qualname.get(d.parent)
        fn = d.node
        if cls is None or cls.kind != "class" or not fn.args.args or fn.args.args[0].arg != node.value.id:
            return None
        stores = []
        for sub in ast.walk(cls.node):
            if isinstance(sub, ast.Assign) and len(sub.targets) == 1:
                t = sub.targets[0]
                if isinstance(t, ast.Attribute) and t.attr == node.attr and isinstance(t.value, ast.Name) and t.value.id == node.value.id:
                    stores.append(sub.value)
            elif isinstance(sub, (ast.AnnAssign, ast.AugAssign)):
                t = sub.target
                if isinstance(t, ast.Attribute) and t.attr == node.attr:
                    stores.append(getattr(sub, "value", None))
        values = []
        for value in stores:
            if value is None:
                return []
            if (isinstance(value, ast.Call) and isinstance(value.func, ast.Attribute) and value.func.attr in SELF_METHODS
                    and isinstance(value.func.value, ast.Attribute) and value.func.value.attr == node.attr):
                continue  # self.m = self.m.eval()
            values.extend(self.values(f, value, depth + 1, seen))
        return values

    def param_values(self, f: PyFile, owner: str, name: str, depth: int, seen: frozenset = frozenset()) -> list:
        """Values of parameter ``name`` of function ``owner``: the arguments of its call sites (or
        its default), the items of a pytest parametrize list for a test, its annotation when nothing
        calls it."""
        d = f.def_by_qualname.get(owner)
        if d is None or d.kind != "function":
            return [UNKNOWN]
        args = d.node.args
        params = [a.arg for a in [*args.posonlyargs, *args.args]]
        is_method = d.parent is not None and f.def_by_qualname.get(d.parent) is not None and \
            f.def_by_qualname[d.parent].kind == "class"
        defaults = dict(zip(params[len(params) - len(args.defaults):], args.defaults))
        defaults.update({a.arg: v for a, v in zip(args.kwonlyargs, args.kw_defaults) if v is not None})
        sites = list(self.calls.calls_of(f.path, owner))
        if is_method and d.node.name == "__init__":
            sites += self.calls.calls_of(f.path, d.parent)
        annotation = next((a.annotation for a in [*args.posonlyargs, *args.args, *args.kwonlyargs]
                           if a.arg == name and a.annotation is not None), None)
        # what the annotation says stands for a value that cannot be followed (nothing calls the
        # function, or a call passes what the model cannot follow: `compile(child)` for each
        # child of `module.named_children()`); a value that is followed still counts
        unknown = [("annotated", f, annotation)] if annotation is not None else [UNKNOWN]
        if not sites:
            listed = parametrized(self.names, f, d, name)  # a test: pytest passes what its list holds
            if listed is not None:
                out = []
                for lf, value in listed:
                    out.extend(self.values(lf, value, depth + 1, seen) if value is not None else [UNKNOWN])
                return out if len(out) <= MAX_ENTRIES else [UNKNOWN]
            return self.values(f, defaults[name], depth + 1, seen) + unknown if name in defaults else unknown
        out: list = []
        for cf, call in sites:
            if any(isinstance(a, ast.Starred) for a in call.args) or any(k.arg is None for k in call.keywords):
                out.append(UNKNOWN)
                continue
            positional = params[1:] if is_method else params
            value = None
            for k in call.keywords:
                if k.arg == name:
                    value = k.value
            if value is None and name in positional and positional.index(name) < len(call.args):
                value = call.args[positional.index(name)]
            if value is not None:
                out.extend(self.values(cf, value, depth + 1, seen))
            elif name in defaults:
                out.extend(self.values(f, defaults[name], depth + 1, seen))
            else:
                out.append(UNKNOWN)
            if len(out) > ap.MAX_ALTERNATIVES:
                return [UNKNOWN]
        return [unknown[0] if alt is UNKNOWN else alt for alt in out]
