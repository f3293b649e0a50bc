"""What a program shows about the inputs of its TorchScript entry points (see also
ts2export.artifact.inputs: the inputs files that `verify` and `convert` read).

``torch.jit.script(model)`` compiled without inputs; ``torch.export`` needs example inputs, and a
trace's example fixes the sizes export may specialize. Programs nearly always show their inputs
somewhere, just not at the entry point: on the artifact loaded back from the path it was saved to
(in this file or in the serving code), on the scripted object called later, on the model a factory
returned, or in the repository's tests, which call the model class. This module finds those calls
(the program model's units and value tracking) and merges the specs (:mod:`.shapes`) of the
tensors passed to them: the example code to export with (tensors of those shapes and dtypes, made
with ``torch.ones``/``torch.zeros``, which leave the random number generator alone) and the
dimensions seen at several sizes (exported dynamic). A recording (``ts2export record``) of the
entry point, when there is one, says it first.
"""

from __future__ import annotations

import ast
import os

from ts2export.model.calls import Calls, without_self_methods
from ts2export.model.origins import Origins
from ts2export.model.pyfile import PyFile, first_arg, returns_of
from ts2export.model.shapes import Shapes, TensorSpec
from ts2export.model.sites import READER, Site
from ts2export.model.torchapi import PASS_THROUGH

#: Methods of a module that are not entry points of its program (an exported module has them too,
#: or they save the artifact).
MODULE_METHODS = {"forward", "__call__", "eval", "train", "to", "cpu", "cuda", "half", "float", "double", "bfloat16",
                  "parameters", "named_parameters", "buffers", "named_buffers", "state_dict", "load_state_dict",
                  "modules", "children", "named_modules", "named_children", "requires_grad_", "zero_grad", "apply",
                  "save", "_save_for_lite_interpreter", "_save_to_buffer_for_lite_interpreter", "register_buffer",
                  "share_memory", "type", "extra_repr", "get_submodule", "get_parameter", "get_buffer"}


class Feeding:
    """Reads, for each entry point, the calls that feed its module and the tensors they pass."""

    def __init__(self, calls: Calls, origins: Origins, shapes: Shapes) -> None:
        self.calls = calls
        self.origins = origins
        self.shapes = shapes

    def feeding_calls(self, site: Site, method: str = "forward") -> list[tuple[PyFile, ast.Call]]:
        """Calls of the module an entry point makes: of its result (and of the artifact loaded
        back in its unit), of the object it scripts or traces, and of instances of the class it
        compiles in the repository's tests. With ``method``: the calls of that method instead
        (``loaded.encode(x)``), on its result, the artifact and the object."""
        found: list[tuple[PyFile, ast.Call]] = []
        producers = [site] + [s for s in (site.unit.sites if site.unit else []) if s.kind == READER]
        for producer in producers:
            found += self._calls_of_value(producer.file, producer.node, method=method)
        target = first_arg(site.node, "obj", "func", "mod")
        if isinstance(target, ast.Name):
            found += self._calls_of_name(site.file, target.id, site.file.scope_at(target), method)
        defs, _unknown = self.origins.targets(site.file, target) if target is not None else (set(), True)
        for path, qualname in sorted(defs) if method == "forward" else ():
            found += self._test_calls(path, qualname)
        unique: dict[int, tuple[PyFile, ast.Call]] = {}
        for f, call in found:
            unique.setdefault(id(call), (f, call))
        return list(unique.values())

    def called_methods(self, site: Site) -> set[str]:
        """Methods other than ``forward`` that the program calls on the value a site makes (a
        script, a trace, an artifact loaded back): the entry points its artifact must offer."""
        out: set[str] = set()
        for target in self._stores_of(site.file, site.node):
            if isinstance(target, ast.Name):
                scope = site.file.scope_at(target)
                for node in ast.walk(scope.node):
                    if (isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute)
                            and isinstance(node.func.value, ast.Name) and node.func.value.id == target.id
                            and site.file.scope_at(node.func.value) is scope):
                        out.add(node.func.attr)
            elif isinstance(target, ast.Attribute) and isinstance(target.value, ast.Name):
                d = site.file.innermost_def(site.file.start(target))
                while d is not None and d.kind != "class":
                    d = site.file.def_by_qualname.get(d.parent) if d.parent else None
                for node in ast.walk(d.node) if d is not None else ():
                    func = node.func if isinstance(node, ast.Call) else None
                    if (isinstance(func, ast.Attribute) and isinstance(func.value, ast.Attribute)
                            and func.value.attr == target.attr and isinstance(func.value.value, ast.Name)
                            and func.value.value.id == target.value.id):
                        out.add(func.attr)
        return out - MODULE_METHODS

    def _stores_of(self, f: PyFile, value: ast.AST) -> list[ast.AST]:
        """Targets that ``value`` (or ``value.eval()`` and the like) is assigned to."""
        return [node.targets[0] for node in f.walk()
                if isinstance(node, ast.Assign) and len(node.targets) == 1 and without_self_methods(node.value, value) is value]

    def _calls_of_value(self, f: PyFile, value: ast.AST, depth: int = 0, method: str = "forward") -> list[tuple[PyFile, ast.Call]]:
        out: list[tuple[PyFile, ast.Call]] = []
        for target in self._stores_of(f, value):
            if isinstance(target, ast.Name):
                out += self._calls_of_name(f, target.id, f.scope_at(target), method)
                out += self._returned(f, target, depth, method)
                out += self._passed_on(f, target.id, f.scope_at(target), depth, method)
            elif isinstance(target, ast.Attribute) and isinstance(target.value, ast.Name):
                out += self._calls_of_attribute(f, target, method)
        out += self._returned_directly(f, value, depth, method)
        return out

    def _returned_directly(self, f: PyFile, value: ast.AST, depth: int, method: str = "forward") -> list[tuple[PyFile, ast.Call]]:
        """``return torch.jit.script(self)``: the calls of what the function's callers bind it to."""
        if depth > 2:
            return []
        d = f.innermost_def(f.start(value))
        if d is None or d.kind != "function":
            return []
        if not any(without_self_methods(r.value) is value for r in returns_of(d.node)):
            return []
        out = []
        for cf, call in self.calls.calls_of(f.path, d.qualname):
            out += self._calls_of_value(cf, call, depth + 1, method)
        return out

    def _calls_of_name(self, f: PyFile, name: str, scope, method: str = "forward") -> list[tuple[PyFile, ast.Call]]:
        out = []
        for node in ast.walk(scope.node):
            if not isinstance(node, ast.Call):
                continue
            func = node.func
            if isinstance(func, ast.Attribute) and func.attr == method:
                func = func.value
            elif method != "forward":
                continue
            if isinstance(func, ast.Name) and func.id == name and f.scope_at(func) is scope:
                out.append((f, node))
        return out

    def _calls_of_attribute(self, f: PyFile, target: ast.Attribute, method: str = "forward") -> list[tuple[PyFile, ast.Call]]:
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
                if isinstance(func, ast.Attribute) and func.attr == method:
                    func = func.value
                elif method != "forward":
                    continue
                if (isinstance(func, ast.Attribute) and func.attr == target.attr and isinstance(func.value, ast.Name)
                        and func.value.id == target.value.id):
                    out.append((f, node))
        return out

    def _passed_on(self, f: PyFile, name: str, scope, depth: int, method: str) -> list[tuple[PyFile, ast.Call]]:
        """The calls of what a name is handed to: the result of ``torch.jit.freeze(name)`` (a pass
        that returns the module), and the parameter of a function of the run that gets it
        (``sample(denoiser)`` calls ``denoiser(x, t)``), with what that function passes on."""
        if depth > 2:
            return []
        out: list[tuple[PyFile, ast.Call]] = []
        for node in ast.walk(scope.node):
            if not isinstance(node, ast.Call):
                continue
            for index, arg in enumerate(node.args):
                bare = without_self_methods(arg)
                if not (isinstance(bare, ast.Name) and bare.id == name and f.scope_at(bare) is scope):
                    continue
                if index == 0 and self.calls.names.qualified(f, node.func) in PASS_THROUGH:
                    out += self._calls_of_value(f, node, depth + 1, method)
                    continue
                callee = self.calls.callee(f, node)
                cf = self.calls.files.file(callee[0]) if callee else None
                d = cf.def_by_qualname.get(callee[1]) if cf is not None else None
                if d is None or d.kind != "function" or isinstance(arg, ast.Starred):
                    continue
                params = [a.arg for a in (*d.node.args.posonlyargs, *d.node.args.args)]
                if d.parent and cf.def_by_qualname.get(d.parent) is not None and cf.def_by_qualname[d.parent].kind == "class":
                    params = params[1:]  # a method: `self` is not passed here
                if index < len(params):
                    inner = cf.scope_at(d.node.body[0])  # the function's own scope
                    out += self._calls_of_name(cf, params[index], inner, method)
                    out += self._passed_on(cf, params[index], inner, depth + 1, method)
        return out

    def _returned(self, f: PyFile, target: ast.Name, depth: int, method: str = "forward") -> list[tuple[PyFile, ast.Call]]:
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
        for cf, call in self.calls.calls_of(f.path, owner):
            out += self._calls_of_value(cf, call, depth + 1, method)
        return out

    def _test_calls(self, path: str, qualname: str) -> list[tuple[PyFile, ast.Call]]:
        """Calls of instances of a class in the run's test files (`tests/`, `test_*.py`)."""
        out = []
        for tf, call in self.calls.calls_of(path, qualname):
            if not is_test_file(tf.path):
                continue
            parent_calls = [n for n in ast.walk(tf.tree) if isinstance(n, ast.Call) and n.func is call]
            out += [(tf, c) for c in parent_calls]  # Model(...)(x)
            out += self._calls_of_value(tf, call)
        return out

    # -- merged evidence -----------------------------------------------------------------------
    def evidence(self, site: Site, method: str = "forward") -> dict | None:
        """What the calls feeding an entry point (or its ``method``) show: plain data for the rules' view."""
        return self._merged(self.feeding_calls(site, method))

    def reader_evidence(self, writer: Site) -> dict | None:
        """What the calls of the artifact a writer saves show, where its unit loads it back (the
        inputs of a `ScriptModule` subclass instance saved with its own `.save`)."""
        calls: list[tuple[PyFile, ast.Call]] = []
        for reader in (s for s in (writer.unit.sites if writer.unit else ()) if s.kind == READER):
            calls += self._calls_of_value(reader.file, reader.node)
        unique = {id(c): (f, c) for f, c in calls}
        return self._merged(list(unique.values()))

    def _merged(self, calls: list[tuple[PyFile, ast.Call]]) -> dict | None:
        by_arity: dict[int, list[tuple[PyFile, ast.Call, list[TensorSpec | None]]]] = {}
        for f, call in calls:
            if call.keywords or any(isinstance(a, ast.Starred) for a in call.args) or not call.args:
                continue
            if expects_failure(f, call):
                continue  # `with pytest.raises(ValueError): op(bad)`: an input the module refuses
            specs = [self.shapes.spec(f, a) for a in call.args]
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


#: Context managers (and their callable forms) whose body is expected to raise or warn: the calls
#: there are made with inputs chosen to be refused, never examples.
EXPECTS_FAILURE = {"raises", "warns", "deprecated_call", "assertRaises", "assertRaisesRegex", "assertRaisesRegexp",
                   "assertWarns", "assertWarnsRegex"}


def expects_failure(f: PyFile, call: ast.Call) -> bool:
    """Whether ``call`` is made where the code expects an error or a warning: inside `with
    pytest.raises(...)` (`self.assertRaises`, `pytest.warns`, ...), or handed to the callable form
    `pytest.raises(E, fn, *args)` / `self.assertRaises(E, fn, *args)`."""
    spans = getattr(f, "_ts2export_expects_failure", None)
    if spans is None:
        spans = []
        for node in f.walk():
            if isinstance(node, (ast.With, ast.AsyncWith)) and any(
                    _expects_failure(item.context_expr) for item in node.items):
                spans.append((node.lineno, node.end_lineno or node.lineno))
            elif isinstance(node, ast.Call) and _expects_failure(node) and len(node.args) >= 2:
                spans.append((node.lineno, node.end_lineno or node.lineno))
        f._ts2export_expects_failure = spans
    return any(a <= call.lineno <= b for a, b in spans)


def _expects_failure(expr: ast.AST) -> bool:
    if not isinstance(expr, ast.Call):
        return False
    func = expr.func
    name = func.attr if isinstance(func, ast.Attribute) else func.id if isinstance(func, ast.Name) else ""
    return name in EXPECTS_FAILURE


def is_test_file(path: str) -> bool:
    """A test module: ``test_*.py``, ``*_test.py``, or under a ``test``/``tests`` folder."""
    parts = path.replace(os.sep, "/").split("/")
    name = parts[-1]
    return "tests" in parts[:-1] or "test" in parts[:-1] or name.startswith("test_") or name.endswith("_test.py")


def recorded(recording, site: Site, method: str = "forward") -> dict | None:
    """The inputs a recording saw ``method`` of the module of an entry point called with
    (``ts2export record``; on the object or on its artifact loaded back), as evidence for the
    rules: the example code, dynamic shapes with named dims (ranges seen), static where nothing
    varied, and per input and dim the sizes (smallest and largest) seen."""
    if recording is None:
        return None
    rec = recording.inputs_with_artifacts(site.file.path, site.start[0], method=method)
    if rec is None and method == "forward":
        made = {s["target"] for s in recording.made_at(site.file.path, site.start[0])}
        if len(made) > 1:  # a helper handed several classes: no one example stands for them all
            return {"several": sorted(made), "recorded": True,
                    "where": [f"recording (this call made {len(made)} different modules: {', '.join(sorted(made)[:4])}"
                              + (" and more" if len(made) > 4 else "") + ")"]}
    if rec is None or rec.args_code is None:
        return None
    proof = recording.proof_at(site.file.path, site.start[0])
    if rec.problem and not (proof and proof.get("verdict") == "proven"):
        # the run's other calls would be refused by the one program an example exports (a proof,
        # where there is one, judged the same and failed)
        return {"problem": rec.problem, "recorded": True,
                "where": [f"recording ({rec.calls} call{'s' if rec.calls != 1 else ''} seen)"]}
    varying = {(p, d): dim for dim in rec.dims for p, d in dim.members}
    shapes = {p: shape for p, shape, _dtype in rec.shapes}
    sizes = []
    for name in rec.arg_names:
        shape = shapes.get(name)
        if shape is None:
            sizes = []
            break
        sizes.append([[varying[(name, d)].min or 0, varying[(name, d)].max] if (name, d) in varying else [n]
                      for d, n in enumerate(shape)])
    proven = ""
    if proof and proof.get("verdict") == "proven":
        n = proof.get("samples", 0)
        proven = f"; exported and compared with TorchScript on the example and {n} recorded sample{'s' if n != 1 else ''}"
    return {
        "example": rec.args_code,
        "kwargs": rec.kwargs_code,
        "dynamic_shapes": rec.dynamic_shapes_inline_code,
        "recorded": True,
        "proof": proof,
        "sizes": sizes,
        "where": [f"recording ({rec.calls} call{'s' if rec.calls != 1 else ''} seen{proven})"],
    }
