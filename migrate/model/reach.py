"""What an entry point compiles or traces: the definitions its targets (or its own class or
function) reach through their bodies, bases, annotations, methods and nested definitions, across
the files of the run; and the recurrent layers built there. Where its target cannot be followed
(`torch.jit.script(module)` in a test helper), a recording of the program answers with the classes
and functions the run really handed it (see :func:`recorded_targets`)."""

from __future__ import annotations

import ast
from dataclasses import dataclass, field
from typing import Callable

from ts2export.model.classes import Classes
from ts2export.model.files import Files
from ts2export.model.names import Names
from ts2export.model.origins import Origins
from ts2export.model.pyfile import Def, PyFile, first_arg
from ts2export.model.ragged import Ragged
from ts2export.model.sites import ENTRY_CLASS, ENTRY_DECORATOR, ENTRY_IF_TRACING, Site
from ts2export.model.torchapi import PACKING, RECURRENT


@dataclass(eq=False)
class Reach:
    files: Files
    names: Names
    origins: Origins
    classes: Classes
    recorded: Callable[[Site], set[tuple[str, str]] | None] | None = None  # see recorded_targets
    _reach_cache: dict[tuple[str, str], set[tuple[str, str]]] = field(default_factory=dict, init=False)
    _members: dict[str, dict[str | None, list[str]]] = field(default_factory=dict, init=False)  # path -> parent -> members
    _refs_found: dict[tuple[str, str], set[tuple[str, str]]] = field(default_factory=dict, init=False)  # _refs's answers
    _ragged: Ragged | None = field(default=None, init=False)  # see data_size_decisions

    def reach(self, site: Site) -> tuple[set[tuple[str, str]], bool]:
        """Definitions an entry point compiles or traces, and whether it may reach unknown code."""
        f = site.file
        if site.kind in (ENTRY_DECORATOR, ENTRY_IF_TRACING, ENTRY_CLASS):
            d = f.innermost_def(site.start)
            roots = {(f.path, d.qualname)} if d is not None else set()
            unknown = False
            if site.kind == ENTRY_CLASS and d is not None:
                roots |= self.classes.subclasses(f.path, d.qualname)
        else:
            roots, unknown = self.origins.targets(f, first_arg(site.node, "obj", "func", "mod"))
            if self.recorded is not None:
                seen = self.recorded(site)
                if seen is not None:  # the run reached it: what it compiled there is the answer (and
                    # the classes it really compiled, where the static targets missed a submodule's)
                    roots, unknown = roots | seen, False
        out: set[tuple[str, str]] = set()
        for root in roots:
            out |= self._closure(root)
        return out, unknown

    def _closure(self, root: tuple[str, str]) -> set[tuple[str, str]]:
        if root in self._reach_cache:
            return self._reach_cache[root]
        seen: set[tuple[str, str]] = set()
        todo = [root]
        while todo:
            key = todo.pop()
            if key in seen:
                continue
            seen.add(key)
            f = self.files.file(key[0])
            d = f.def_by_qualname.get(key[1]) if f is not None else None
            if d is None:
                continue
            members = self._members.get(f.path)
            if members is None:
                members = self._members[f.path] = {}
                for other in f.defs:
                    members.setdefault(other.parent, []).append(other.qualname)
            todo.extend((f.path, q) for q in members.get(d.qualname, ()))  # methods and nested definitions
            for ref in self._refs(f, d):
                todo.append(ref)
        self._reach_cache[root] = seen
        return seen

    def _refs(self, f: PyFile, d: Def) -> set[tuple[str, str]]:
        """Definitions of the run that a definition's body, bases and annotations name (found once
        per definition: the closures of many roots share them)."""
        known = self._refs_found.get((f.path, d.qualname))
        if known is None:
            known = self._refs_found[(f.path, d.qualname)] = self._find_refs(f, d)
        return set(known)

    def _find_refs(self, f: PyFile, d: Def) -> set[tuple[str, str]]:
        out: set[tuple[str, str]] = set()
        nodes: list[ast.AST] = []
        for sub in ast.walk(d.node):
            if isinstance(sub, ast.Attribute):
                nodes.append(sub)
            elif isinstance(sub, ast.Name) and isinstance(sub.ctx, ast.Load):
                nodes.append(sub)
            elif isinstance(sub, ast.Constant) and isinstance(sub.value, str) and sub.value.isidentifier():
                nodes.append(ast.Name(sub.value, ast.Load(), lineno=sub.lineno, col_offset=sub.col_offset))
                f.scope_of_node[id(nodes[-1])] = f.scope_at(sub)
        for node in nodes:
            found = self.names.def_of(f, node)
            if found is not None:
                out.add((found[0].path, found[1].qualname))
        out |= self._constructor_arguments(f, d)
        return out

    def _constructor_arguments(self, f: PyFile, d: Def) -> set[tuple[str, str]]:
        """What the callers of a class hand its ``__init__``, followed to the definitions they are
        made from: `Transducer(encoder=get_encoder(params))` stores a module of another class as a
        submodule, which TorchScript compiles with the module. (What cannot be followed, a size from
        a config, adds nothing: such arguments are seldom modules.)"""
        owner = f.def_by_qualname.get(d.parent) if d.parent else None
        if d.kind != "function" or owner is None or owner.kind != "class" or d.qualname.rsplit(".", 1)[-1] != "__init__":
            return set()
        args = d.node.args
        params = {a.arg for a in [*args.posonlyargs, *args.args][1:]} | {a.arg for a in args.kwonlyargs}
        first: dict[str, ast.Name] = {}
        for sub in ast.walk(d.node):
            if isinstance(sub, ast.Name) and isinstance(sub.ctx, ast.Load) and sub.id in params:
                if sub.id not in first or (sub.lineno, sub.col_offset) < (first[sub.id].lineno, first[sub.id].col_offset):
                    first[sub.id] = sub
        out: set[tuple[str, str]] = set()
        for name in first.values():
            found, _ = self.origins.targets(f, name)
            out |= found
        return out

    def recurrent_layers(self, site: Site) -> tuple[str, ...]:
        """The recurrent layers (nn.GRU/LSTM/RNN) built in the code an entry point reaches: export
        fixes their sequence length."""
        defs, _ = self.reach(site)
        found: set[str] = set()
        for path, qualname in defs:
            f = self.files.file(path)
            d = f.def_by_qualname.get(qualname) if f is not None else None
            if d is None:
                continue
            for node in ast.walk(d.node):
                if isinstance(node, ast.Call):
                    name = self.names.qualified(f, node.func) or ""
                    if name in RECURRENT:
                        found.add(name.rsplit(".", 1)[-1])
        return tuple(sorted(found))

    def string_inputs(self, site: Site) -> tuple[str, ...]:
        """The parameters without a default of the ``forward`` of what an entry point makes (or of
        the function it scripts) annotated with ``str`` (``texts: List[str]``), as ``"path:line `param: annotation`"``:
        torch.export takes tensors, and specializes a string to the example's value."""
        if site.kind in (ENTRY_DECORATOR, ENTRY_IF_TRACING, ENTRY_CLASS):
            return ()
        roots, _ = self.origins.targets(site.file, first_arg(site.node, "obj", "func", "mod"))
        found: list[str] = []
        for path, qualname in sorted(roots):
            f = self.files.file(path)
            d = f.def_by_qualname.get(qualname) if f is not None else None
            if d is not None and d.kind == "class":
                d = f.def_by_qualname.get(qualname + ".forward")
            if d is None or d.kind != "function":
                continue
            args = d.node.args
            positional = [*args.posonlyargs, *args.args]
            required = positional[:len(positional) - len(args.defaults)] + [
                a for a, default in zip(args.kwonlyargs, args.kw_defaults) if default is None]
            for a in required:  # (one with a default that callers leave alone is exported as it is)
                if a.annotation is not None and _holds_str(a.annotation):
                    found.append(f"{path}:{a.lineno} `{a.arg}: {f.segment(a.annotation)}`")
        return tuple(found)

    def packed_sequences(self, site: Site) -> tuple[str, ...]:
        """The calls that pack a padded batch for a recurrent layer (`pack_padded_sequence`) in the
        code an entry point reaches, as ``"path:line `call`"``: torch.export cannot trace nn.GRU /
        LSTM / RNN run on a PackedSequence, at any shape."""
        defs, _ = self.reach(site)
        found: list[str] = []
        for path, f, d in self.files.functions(defs):
            for node in ast.walk(d.node):
                if isinstance(node, ast.Call) and (self.names.qualified(f, node.func) or "") in PACKING:
                    shown = f"{path}:{node.lineno} `{f.segment(node.func)}(...)`"
                    if shown not in found:
                        found.append(shown)
        return tuple(found)

    def data_size_decisions(self, site: Site) -> tuple[str, ...]:
        """The Python decisions on a size that depends on tensor data (``if matches.size(0) ==
        0:`` after ``nonzero`` or a boolean mask, through helpers in other files too) in the code
        an entry point reaches, as ``"path:line `test`"`` (see :mod:`.ragged`)."""
        if self._ragged is None:
            self._ragged = Ragged(self.files, self.names)
        defs, _ = self.reach(site)
        return self._ragged.decisions(defs)

    def scripting_decisions(self, site: Site) -> tuple[str, ...]:
        """The places in the code an entry point reaches where ``torch.jit.is_scripting()`` decides
        more than checks, as ``"path:line `code`"``: TorchScript takes one side, eager Python the
        other, so running the module eager instead of its script computes otherwise there
        (``if not torch.jit.is_scripting() and isinstance(e, EdgeIndex): dim_size = e.num_cols``).
        An ``if`` whose sides only check (``raise``, ``assert``, a call for its effect: input
        validation) is not one."""
        defs, _ = self.reach(site)
        found: list[str] = []
        for path, f, d in self.files.functions(defs):
            checks: set[int] = set()  # the guard calls of ifs that only check
            for node in ast.walk(d.node):
                if isinstance(node, ast.If) and _only_checks(node.body) and _only_checks(node.orelse):
                    checks |= {id(c) for c in ast.walk(node.test) if isinstance(c, ast.Call)}
            for node in ast.walk(d.node):
                if (isinstance(node, ast.Call) and id(node) not in checks
                        and (self.names.qualified(f, node.func) or "") in SCRIPTING_GUARDS):
                    shown = f"{path}:{node.lineno} `{f.segment(node)}`"
                    if shown not in found:
                        found.append(shown)
        return tuple(found)

    def size_branches(self, site: Site) -> tuple[str, ...]:
        """The Python branches on an input's size in the ``forward`` methods an entry point reaches
        (``if x.shape[0] > 3:``, ``while len(x) < n``, ``a if x.size(1) == 4 else b``): the export
        keeps the branch its example takes and guards the size, where TorchScript's script took
        the other branch at other sizes (and its trace had baked the example's in)."""
        defs, _ = self.reach(site)
        found: list[str] = []
        for path, f, d in self.files.functions(defs):
            if d.qualname.rsplit(".", 1)[-1] != "forward":
                continue
            params = {a.arg for a in [*d.node.args.posonlyargs, *d.node.args.args][1:]}
            sizes = _size_locals(d.node, params)
            for node in ast.walk(d.node):
                if isinstance(node, (ast.If, ast.While, ast.IfExp)) and _compares_size(node.test, params, sizes):
                    found.append(f"{path}:{node.lineno} `{f.segment(node.test)}`")
        return tuple(found)


def _holds_str(annotation: ast.AST) -> bool:
    """Whether a type annotation holds strings as values (`str`, `List[str]`, `Optional[str]`, the
    values of a dict); a dict's string keys are its structure, which torch.export takes."""
    if isinstance(annotation, ast.Name):
        return annotation.id == "str"
    if isinstance(annotation, ast.Constant) and isinstance(annotation.value, str):  # "List[str]"
        try:
            return _holds_str(ast.parse(annotation.value, mode="eval").body)
        except SyntaxError:
            return False
    if isinstance(annotation, ast.Attribute):
        return False
    if isinstance(annotation, ast.Subscript):
        base = annotation.value.attr if isinstance(annotation.value, ast.Attribute) else getattr(annotation.value, "id", "")
        args = list(annotation.slice.elts) if isinstance(annotation.slice, ast.Tuple) else [annotation.slice]
        if base in ("Dict", "dict", "Mapping", "MutableMapping", "OrderedDict") and len(args) == 2:
            args = args[1:]
        return any(_holds_str(x) for x in args)
    if isinstance(annotation, ast.BinOp):  # `str | None`
        return _holds_str(annotation.left) or _holds_str(annotation.right)
    return False


def recorded_targets(recording, files: Files, calls) -> Callable[[Site], set[tuple[str, str]] | None]:
    """For an entry point, the definitions of the run that the recorded run compiled or traced
    through it (the classes of the modules it was handed, their submodules' classes, the
    functions); None where the run never reached it, or did not reach every call of the function
    it is in (a helper that tests call: a test the run skipped would hand it another class)."""

    def lookup(site: Site) -> set[tuple[str, str]] | None:
        entries = recording.compiled_at(site.file.path, site.start[0])
        if entries is None or not _every_call_reached(site):
            return None
        out: set[tuple[str, str]] = set()
        for file, qualname in entries:
            path = files.recorded(file, recording.cwd)
            if path is not None:
                out.add((path, qualname))
        return out

    def _every_call_reached(site: Site) -> bool:
        if not site.scope:
            return True  # at module level: the run reached it, and nothing else hands it a value
        seen: dict[str, list[int]] = {}
        for file, line in recording.callers_at(site.file.path, site.start[0]) or ():
            path = files.recorded(file, recording.cwd)
            if path is not None:
                seen.setdefault(path, []).append(line)
        callers = calls.calls_of(site.file.path, site.scope)
        return bool(callers) and all(
            any(call.lineno <= line <= (call.end_lineno or call.lineno) for line in seen.get(f.path, ()))
            for f, call in callers)

    return lookup


#: The calls that tell TorchScript from eager Python.
SCRIPTING_GUARDS = {"torch.jit.is_scripting", "torch.jit._script.is_scripting", "torch._jit_internal.is_scripting"}


def _only_checks(body: list[ast.stmt]) -> bool:
    """Statements that only check: ``raise``, ``assert``, a call for its effect, ``pass``, a
    docstring, and ifs of such."""
    for stmt in body:
        if isinstance(stmt, (ast.Raise, ast.Assert, ast.Pass)):
            continue
        if isinstance(stmt, ast.Expr) and isinstance(stmt.value, (ast.Call, ast.Constant)):
            continue
        if isinstance(stmt, ast.If) and _only_checks(stmt.body) and _only_checks(stmt.orelse):
            continue
        return False
    return True


def _compares_size(test: ast.AST, params: set[str], sizes: frozenset[str] = frozenset()) -> bool:
    """Whether a condition compares the size of one of ``params`` (``x.shape[0]``, ``x.size(1)``,
    ``x.size()[1]``, ``len(x)``, or a local ``sizes`` holds one) with something."""
    for cmp in (n for n in ast.walk(test) if isinstance(n, ast.Compare)):
        for operand in [cmp.left, *cmp.comparators]:
            if _size_of_param(operand, params) or (isinstance(operand, ast.Name) and operand.id in sizes):
                return True
    return False


def _size_locals(func: ast.AST, params: set[str]) -> frozenset[str]:
    """The local names a function binds to a size of one of ``params``: ``rows = x.shape[0]``,
    ``n = x.size(1)``, ``n = len(x)``, ``b, c, h, w = x.shape`` (and ``= x.size()``)."""
    out: set[str] = set()
    for node in ast.walk(func):
        if not isinstance(node, ast.Assign) or len(node.targets) != 1:
            continue
        target, value = node.targets[0], node.value
        if isinstance(target, ast.Name) and _size_of_param(value, params):
            out.add(target.id)
        elif isinstance(target, ast.Tuple) and _whole_shape(value, params):
            out.update(e.id for e in target.elts if isinstance(e, ast.Name))
    return frozenset(out)


def _whole_shape(node: ast.AST, params: set[str]) -> bool:
    """``x.shape`` or ``x.size()`` of one of ``params``."""
    if isinstance(node, ast.Call) and not node.args and isinstance(node.func, ast.Attribute) and node.func.attr == "size":
        node = node.func
    elif not (isinstance(node, ast.Attribute) and node.attr == "shape"):
        return False
    return isinstance(node.value, ast.Name) and node.value.id in params


def _size_of_param(node: ast.AST, params: set[str]) -> bool:
    if isinstance(node, ast.Subscript):
        node = node.value
        if isinstance(node, ast.Call) and not node.args:  # x.size()[i]
            node = node.func if isinstance(node.func, ast.Attribute) and node.func.attr == "size" else node
            return isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name) and node.value.id in params
        return (isinstance(node, ast.Attribute) and node.attr == "shape" and isinstance(node.value, ast.Name)
                and node.value.id in params)
    if isinstance(node, ast.Call):
        func = node.func
        if isinstance(func, ast.Attribute) and func.attr == "size" and node.args:  # x.size(i)
            return isinstance(func.value, ast.Name) and func.value.id in params
        if isinstance(func, ast.Name) and func.id == "len" and len(node.args) == 1:  # len(x)
            return isinstance(node.args[0], ast.Name) and node.args[0].id in params
    return False

