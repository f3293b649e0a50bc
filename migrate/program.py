"""The program model: what a migration must keep together, across files and rules.

Built once per run from every Python file of the run (:mod:`ts2export.pyindex`, the standard
library's ``ast``; no libcst), it knows

* the TorchScript **entry points**: ``torch.jit.script``/``trace``/``trace_module`` calls,
  ``@torch.jit.script`` and ``@torch.jit.script_if_tracing`` definitions, ``torch.jit.ScriptModule``
  subclasses;
* the **code they compile or trace**: the classes and functions reachable from each entry point,
  followed through imports into other files of the run (bases, methods, submodules built in
  ``__init__``, functions called, names in annotations);
* the **artifacts**: every writer (``.save(p)``, ``torch.jit.save(m, p)``, lite-interpreter saves)
  and reader (``torch.jit.load(p)``, lite loads), with its path read as a pattern
  (:mod:`ts2export.artifact_paths`: literals, f-strings, ``os.path.join``, pathlib ``/``,
  ``str(...)``, names bound once, and parameters of functions bound at their call sites), and the
  entry point each writer saves (names, ``self.`` attributes, ``.eval()``-like calls, factories).

A **unit** is a set of call sites that must migrate together: an entry point, the writers that
save its value, the readers whose path may match a writer's, and what those readers save again.
After the rules have checked every file (the engine's first pass), :meth:`Program.solve` decides
which fixes to hold back so that no program breaks:

1. a unit whose call sites cannot all be rewritten (no fix, an unsafe fix without
   ``--unsafe-fixes``, suppressed, a reader of an artifact made outside the run) keeps all of them;
2. a fix inside code that an entry point which stays still compiles (or traces) is held back
   unless its rule keeps that code working under TorchScript (``keeps_torchscript``,
   ``keeps_tracing``);
3. an entry point rewritten to ``torch.export`` is held back when the code it exports keeps a
   construct that makes export fail (``blocks_export`` findings that are not fixed);

repeated until nothing changes. Rules never see this module: the engine applies the decision, and
gives each rule only a small per-file view (:class:`ts2export.rule.ProgramView`).
"""

from __future__ import annotations

import ast
import builtins
import os
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Iterable, Sequence

from ts2export import artifact_paths as ap
from ts2export.memo import PathMemo
from ts2export.pyindex import Def, Pos, PyFile, dotted, first_arg, module_name, returns_of
from ts2export.rule import ProgramView, object_key

SCRIPT = "torch.jit.script"
TRACE = "torch.jit.trace"
TRACE_MODULE = "torch.jit.trace_module"
JIT_SAVE = "torch.jit.save"
JIT_LOAD = "torch.jit.load"
LITE_LOADS = {"torch.jit._load_for_lite_interpreter", "torch.jit.mobile._load_for_lite_interpreter"}
SCRIPT_IF_TRACING = "torch.jit.script_if_tracing"
SCRIPT_MODULES = {"torch.jit.ScriptModule", "torch.jit._script.ScriptModule", "torch.jit.RecursiveScriptModule"}
# Calls that return (a transformed copy of) the TorchScript module they are given.
PASS_THROUGH = {"torch.jit.freeze", "torch.jit.optimize_for_inference",
                "torch.utils.mobile_optimizer.optimize_for_mobile"}
# Methods of a module that return the module itself.
SELF_METHODS = {"eval", "train", "to", "cpu", "cuda", "half", "float", "double", "bfloat16", "requires_grad_",
                "share_memory"}
RECURRENT = {"torch.nn.GRU", "torch.nn.LSTM", "torch.nn.RNN", "torch.nn.modules.rnn.GRU", "torch.nn.modules.rnn.LSTM",
             "torch.nn.modules.rnn.RNN"}
SAVE_METHODS = {"save": "save", "_save_for_lite_interpreter": "lite-save", "_save_to_buffer_for_lite_interpreter": "lite-save"}

# Site kinds
ENTRY_SCRIPT, ENTRY_TRACE = "script", "trace"
ENTRY_DECORATOR, ENTRY_IF_TRACING, ENTRY_CLASS = "script-decorator", "script-if-tracing", "script-module-class"
WRITER, READER = "writer", "reader"
TRANSFORM = "transform"  # freeze / optimize_for_inference / optimize_for_mobile of a module
#: Kinds whose call is rewritten into something that TorchScript code around it cannot use.
CALL_SITES = {ENTRY_SCRIPT, ENTRY_TRACE, WRITER, READER}
#: Kinds that make TorchScript compile code (the rest trace it).
COMPILERS = {ENTRY_SCRIPT, ENTRY_DECORATOR, ENTRY_IF_TRACING, ENTRY_CLASS}

_UNKNOWN = object()  # a value that cannot be followed
_MAX_DEPTH = 8


@dataclass(eq=False)
class Site:
    """One TorchScript construct the model tracks."""

    kind: str
    file: PyFile
    node: ast.AST
    start: Pos
    end: Pos
    scope: str  # qualname of the enclosing definition ("" at module level)
    text: str
    api: str = ""  # the TorchScript function called (or "method .save")
    findings: list["ScanFinding"] = field(default_factory=list)
    patterns: list[ap.Pattern] = field(default_factory=list)  # writers and readers
    unit: "Unit | None" = None
    writes_lite: bool = False

    @property
    def where(self) -> str:
        return f"{self.file.path}:{self.start[0]}"

    def describe(self) -> str:
        if self.kind in (ENTRY_DECORATOR, ENTRY_IF_TRACING):
            return f"`@{self.text}` on `{self.scope}` at {self.where}"
        return f"`{self.text}` at {self.where}"


@dataclass(eq=False)
class ScanFinding:
    """A finding of the first pass, as the model needs it (plain data)."""

    rule_id: str
    path: str
    start: Pos
    end: Pos
    anchor: str
    fixable: bool  # a fix exists that this run's mode applies
    message: str
    keeps_torchscript: bool = False
    keeps_tracing: bool = False
    blocks_export: bool = False
    fix_spans: tuple[tuple[Pos, Pos, str], ...] = ()  # (start, end, code written) of each edit
    defs: tuple[str, ...] = ()  # qualnames of the enclosing definitions, innermost first

    @property
    def where(self) -> str:
        return f"{self.path}:{self.start[0]}"

    @property
    def key(self) -> tuple[str, str]:
        return self.path, self.anchor


@dataclass(frozen=True)
class Env:
    """The arguments of one call of a function being followed (context for its parameters)."""

    function: tuple[str, str]  # (path, qualname)
    args: dict


@dataclass(eq=False)
class Unit:
    sites: list[Site] = field(default_factory=list)
    label: str = ""


@dataclass
class Decision:
    """What the model decided for one run (plain data, per file)."""

    held: dict[str, dict[str, str]] = field(default_factory=dict)  # path -> anchor -> reason
    regions: dict[str, dict[str, tuple[str | None, str | None]]] = field(default_factory=dict)
    units: dict[str, dict[str, str]] = field(default_factory=dict)  # path -> anchor -> unit label

    def for_file(self, path: str) -> "FileDecision":
        return FileDecision(self.held.get(path, {}), self.regions.get(path, {}), self.units.get(path, {}))


@dataclass(frozen=True)
class FileDecision:
    held: dict[str, str]
    regions: dict[str, tuple[str | None, str | None]]  # def qualname -> (compiled by, traced by)
    units: dict[str, str]

    def region_hold(self, defs: Sequence[str], keeps_torchscript: bool, keeps_tracing: bool) -> str | None:
        """Why a fix inside ``defs`` (innermost first) must wait, if it must."""
        for qualname in defs:
            compiled, traced = self.regions.get(qualname, (None, None))
            if compiled and not keeps_torchscript:
                return compiled
            if traced and not keeps_tracing:
                return traced
        return None


class Program:
    """The program model of one run. ``sources`` maps each Python file of the run to its bytes."""

    def __init__(self, sources: dict[str, bytes], external_readers: bool = False, recording=None) -> None:
        self.external_readers = external_readers
        self.recording = recording  # a ts2export.recording.Recording: what the program was seen doing
        self.sources = sources
        self.files: dict[str, PyFile] = {}
        inits = {os.path.dirname(os.path.abspath(p)) for p in sources if os.path.basename(p) == "__init__.py"}

        def has_init(folder: str) -> bool:
            return folder in inits or os.path.isfile(os.path.join(folder, "__init__.py"))

        self._module_names = {path: module_name(path, has_init) for path in sources}
        self._by_abspath = {os.path.abspath(path): path for path in sources}
        self.modules: dict[str, list[str]] = {}
        for path, name in self._module_names.items():
            self.modules.setdefault(name, []).append(path)
        self.sites: list[Site] = []
        self._calls: dict[str, list] | None = None  # path -> [(call, callee)]
        self._callers: dict[tuple[str, str], list] = {}  # (path, qualname) -> calls_of's answer
        self._reach_cache: dict[tuple[str, str], set[tuple[str, str]]] = {}
        self._links_by_value: list[tuple[Site, Site]] | None = None  # see _value_links
        self._origins: dict[tuple, list] = {}  # (id(node), depth, id(env)) -> origins's answer
        self._targets: dict[tuple[int, int], tuple[frozenset, bool]] = {}  # (id(node), depth) -> targets's answer
        self._values = PathMemo([])  # values's answers (they cut cycles with the path: see ts2export.memo)
        self._kinds = PathMemo("")  # object_kind's answers, likewise
        self._defs_found: dict[tuple, tuple[PyFile, Def] | None] = {}  # (name, near, depth) -> lookup_def's answer
        self._patterns: dict[tuple[int, int], list] = {}  # (id(node), depth) -> patterns's answer
        self._envs: dict[tuple, Env | None] = {}  # (id(call), path, qualname) -> _call_env's answer
        self._envs_by_content: dict[tuple, Env] = {}  # see _make_env
        self._roots: dict[tuple[str, str, int], list] = {}  # _script_module_roots's answers
        self._members: dict[str, dict[str | None, list[str]]] = {}  # path -> parent qualname -> members
        self._refs_found: dict[tuple[str, str], set[tuple[str, str]]] = {}  # (path, qualname) -> _refs's answer
        self._unknown_targets: list[Site] = []
        self.broken: dict[str, str] = {}  # files that ast could not read
        for path, data in sources.items():
            if self._may_hold_sites(path, data):
                f = self.file(path)
                if f is not None:
                    self._find_sites(f)
        self._link()

    def _may_hold_sites(self, path: str, data: bytes) -> bool:
        """Whether a file can hold a site (see :meth:`_find_sites`), from its bytes: the other
        files are parsed only when a question needs them (a call of a compiled class, a
        definition), which keeps a large tree's memory and time to the files that matter.

        A site is a call or decorator whose name :meth:`qualified` resolves to one of TorchScript's
        entry points (all under ``torch.jit``, and ``torch.utils.mobile_optimizer``), or a method
        named ``save``/``_save_for_lite_interpreter``. That name is an import's target or the
        file's own module plus what the file writes, so the file's text names ``jit``,
        ``mobile_optimizer`` or ``optimize_for_mobile`` (or ``save``), except where a relative
        import or a local definition supplies the package: in a module of ``torch.jit`` itself."""
        return (b"jit" in data or b"save" in data or b"mobile_optimizer" in data or b"optimize_for_mobile" in data
                or self._module_names[path].startswith("torch.jit"))

    # -- files and names ---------------------------------------------------------------------
    def file(self, path: str) -> PyFile | None:
        if path in self.files:
            return self.files[path]
        if path in self.broken or path not in self.sources:
            return None
        try:
            f = PyFile(path, self.sources[path], self._module_names[path])
        except (SyntaxError, ValueError, RecursionError, MemoryError) as exc:
            self.broken[path] = str(exc)
            return None
        self.files[path] = f
        return f

    def _module_paths(self, name: str, near: str | None = None) -> list[str]:
        """The run's files of module ``name``. Failing that, as Python finds a module when a script
        runs (its own folder is on ``sys.path``): the file of that name beside ``near``
        (``from export import export`` in a script of a folder that is also a package, whose files
        are named ``pkg.export``)."""
        paths = self.modules.get(name)
        if paths or near is None or not name:
            return paths or []
        base = os.path.join(os.path.dirname(os.path.abspath(near)), *name.split("."))
        return [p for p in (self._by_abspath.get(base + ".py"), self._by_abspath.get(os.path.join(base, "__init__.py")))
                if p is not None][:1]

    def _module_file(self, name: str, near: str | None = None) -> PyFile | None:
        paths = self._module_paths(name, near)
        if not paths:
            return None
        if near is not None and len(paths) > 1:
            folder = os.path.dirname(near)
            paths = sorted(paths, key=lambda p: os.path.dirname(p) != folder)
        return self.file(paths[0])

    def qualified(self, f: PyFile, node: ast.AST) -> str | None:
        """The dotted name an expression refers to (imports followed; module-level definitions of
        the file as ``module.qualname``), or None."""
        parts = dotted(node)
        if not parts:
            return None
        found = f.scope_at(node).lookup(parts[0])
        if found is None:
            return ".".join(["builtins", *parts]) if hasattr(builtins, parts[0]) else None
        scope, binding = found
        if binding.imports and not binding.values and not binding.defs and len(set(binding.imports)) == 1:
            return ".".join([binding.imports[0], *parts[1:]])
        if binding.defs and not binding.values and not binding.imports and len(binding.defs) == 1:
            return ".".join([f"{f.module}.{binding.defs[0]}" if f.module else binding.defs[0], *parts[1:]])
        return None

    def lookup_def(self, name: str, near: str | None = None, depth: int = 0) -> tuple[PyFile, Def] | None:
        """The definition in the run that a dotted name names (through re-exports), if any."""
        if depth > _MAX_DEPTH or not name:
            return None
        key = (name, near, depth)  # star imports branch, and may import each other
        if key not in self._defs_found:
            self._defs_found[key] = self._find_def(name, near, depth)
        return self._defs_found[key]

    def _find_def(self, name: str, near: str | None, depth: int) -> tuple[PyFile, Def] | None:
        parts = name.split(".")
        for cut in range(len(parts), 0, -1):
            f = self._module_file(".".join(parts[:cut]), near)
            if f is None:
                continue
            rest = parts[cut:]
            if not rest:
                return None  # a module, not a definition
            d = f.def_by_qualname.get(".".join(rest))
            if d is not None:
                return f, d
            for i in range(len(rest), 0, -1):  # a definition, then attributes of it
                d = f.def_by_qualname.get(".".join(rest[:i]))
                if d is not None:
                    return (f, d) if i == len(rest) else None
            binding = f.module_scope.names.get(rest[0])
            if binding is not None and binding.imports:
                return self.lookup_def(".".join([binding.imports[0], *rest[1:]]), f.path, depth + 1)
            for star in f.star_imports:
                found = self.lookup_def(".".join([star, *rest]), f.path, depth + 1)
                if found is not None:
                    return found
            return None
        return None

    def in_run(self, name: str, near: str | None = None) -> bool:
        """Whether a dotted name lies in a module of this run (else it is a library's), as
        :meth:`lookup_def` finds modules from the file ``near``."""
        parts = name.split(".")
        return any(self._module_paths(".".join(parts[:cut]), near) for cut in range(len(parts), 0, -1))

    def def_of(self, f: PyFile, node: ast.AST) -> tuple[PyFile, Def] | None:
        name = self.qualified(f, node)
        return self.lookup_def(name, f.path) if name else None

    # -- following values --------------------------------------------------------------------
    def values(self, f: PyFile, node: ast.AST, depth: int = 0, seen: frozenset = frozenset(), env: "Env | None" = None) -> list:
        """What ``node`` may evaluate to, as alternatives: ``(file, expr)``, ``("def", file, Def)``
        for a definition of the run, or :data:`_UNKNOWN`. Names are followed to every value they
        are bound to, parameters to the arguments of their call sites (and their default),
        ``self.attr`` to its assignments in the class. A value met again (``m = script(m)``) adds
        nothing. ``env``: the arguments of one call of the function being followed (a factory)."""
        if depth > _MAX_DEPTH:
            return [_UNKNOWN]
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
                out.append(("def", f, d) if d is not None else _UNKNOWN)
            for target in binding.imports:
                hit = self.lookup_def(target, f.path)
                out.append(("def", hit[0], hit[1]) if hit is not None else (f, node))
            for value in binding.values:
                out.extend(self.values(f, value, depth + 1, seen, env) if value is not None else [_UNKNOWN])
            for iterable, index in binding.loops:
                out.extend(self._iterated(f, iterable, index, depth + 1, seen, env))
            if binding.param_of is not None:
                out.extend(self._param_values(f, binding.param_of, node.id, depth, seen))
            return out
        if isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name):
            assigned = self._self_attribute(f, node, depth, seen)
            if assigned is not None:
                return assigned if assigned else [_UNKNOWN]
        if isinstance(node, ast.NamedExpr):
            return self.values(f, node.value, depth + 1, seen, env)
        if isinstance(node, ast.IfExp):
            truth = self._truth(f, node.test, env)
            body = self.values(f, node.body, depth + 1, seen, env) if truth is not False else []
            orelse = self.values(f, node.orelse, depth + 1, seen, env) if truth is not True else []
            return body + orelse
        if isinstance(node, ast.BoolOp):
            return [v for value in node.values for v in self.values(f, value, depth + 1, seen, env)]
        return [(f, node)]

    def _iterated(self, f: PyFile, iterable: ast.AST, index: int | None, depth: int, seen: frozenset, env) -> list:
        """Values a loop variable takes: the elements of a literal list, tuple or set (through names
        and parameters), or the ``index``-th item of each when the loop unpacks tuples."""
        out: list = []
        for alt in self.values(f, iterable, depth + 1, seen, env):
            if alt is _UNKNOWN or alt[0] in ("def", "annotated"):
                out.append(_UNKNOWN)
                continue
            vf, expr = alt
            if not isinstance(expr, (ast.List, ast.Tuple, ast.Set)):
                out.append(_UNKNOWN)
                continue
            for elt in expr.elts:
                if index is not None:
                    if not isinstance(elt, (ast.Tuple, ast.List)) or len(elt.elts) <= index:
                        out.append(_UNKNOWN)
                        continue
                    elt = elt.elts[index]
                if isinstance(elt, ast.Starred):
                    out.append(_UNKNOWN)
                    continue
                out.extend(self.values(vf, elt, depth + 1, seen, env))
        return out

    def _constant(self, f: PyFile, node: ast.AST, env: "Env | None", depth: int = 0):
        """The value of a constant expression (through names bound once and the call's
        arguments), or ``_UNKNOWN``."""
        if depth > _MAX_DEPTH:
            return _UNKNOWN
        if isinstance(node, ast.Constant):
            return node.value
        if isinstance(node, ast.Name):
            values = self.values(f, node, depth + 1, env=env)
            if len(values) == 1 and values[0] is not _UNKNOWN and values[0][0] != "def" and values[0][1] is not node:
                return self._constant(values[0][0], values[0][1], env, depth + 1)
        return _UNKNOWN

    def _truth(self, f: PyFile, test: ast.AST, env: "Env | None") -> bool | None:
        """Whether a condition is statically true or false (None: cannot tell)."""
        if isinstance(test, ast.Compare) and len(test.ops) == 1:
            left = self._constant(f, test.left, env)
            right = self._constant(f, test.comparators[0], env)
            if left is _UNKNOWN or right is _UNKNOWN:
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

    def calls_of(self, path: str, qualname: str) -> list[tuple[PyFile, ast.Call]]:
        """Call sites in the run of the function (or class: its constructor) ``qualname`` of ``path``.
        Only files whose text names it are parsed for this."""
        # a file that calls it names it (or, for a method, names its class: the instance is made
        # there, or the call is `self.method()` inside the class)
        known = self._callers.get((path, qualname))
        if known is not None:  # the sources never change: each question is answered once
            return list(known)
        name = qualname.split(".", 1)[0].encode()
        out = []
        for p, data in self.sources.items():
            if name not in data:
                continue
            f = self.file(p)
            if f is None:
                continue
            for call, target in self._file_calls(f):
                if target == (path, qualname):
                    out.append((f, call))
        self._callers[(path, qualname)] = out
        return list(out)

    def _file_calls(self, f: PyFile) -> list[tuple[ast.Call, tuple[str, str] | None]]:
        if self._calls is None:
            self._calls = {}
        cached = self._calls.get(f.path)
        if cached is None:
            cached = [(node, self._callee(f, node)) for node in f.walk() if isinstance(node, ast.Call)]
            self._calls[f.path] = cached
        return cached

    def _callee(self, f: PyFile, call: ast.Call) -> tuple[str, str] | None:
        func = call.func
        if isinstance(func, ast.Attribute) and isinstance(func.value, ast.Name):
            d = f.innermost_def(f.start(call))
            while d is not None and d.kind != "function":
                d = f.def_by_qualname.get(d.parent) if d.parent else None
            if d is not None and d.parent and d.node.args.args and d.node.args.args[0].arg == func.value.id:
                cls = f.def_by_qualname.get(d.parent)
                if cls is not None and cls.kind == "class":
                    method = f.def_by_qualname.get(f"{cls.qualname}.{func.attr}")
                    if method is not None:
                        return f.path, method.qualname
        found = self.def_of(f, func)
        if found is None and isinstance(func, ast.Name):
            # calling an instance: `server(x)` runs `Server.__call__` (`forward` for a module)
            cls = self._assigned_class(f, func)
            if cls is not None:
                for method in ("__call__", "forward"):
                    d = cls[0].def_by_qualname.get(f"{cls[1].qualname}.{method}")
                    if d is not None:
                        return cls[0].path, d.qualname
            return None
        if found is None and isinstance(func, ast.Attribute) and isinstance(func.value, ast.Name):
            # a method of an instance of a class of the run: `predictor = Predictor(d); predictor.predict(x)`
            # (the receiver followed through assignments only: the call index must not need itself)
            cls = self._assigned_class(f, func.value)
            if cls is not None:
                method = cls[0].def_by_qualname.get(f"{cls[1].qualname}.{func.attr}")
                if method is not None:
                    return cls[0].path, method.qualname
            return None
        return (found[0].path, found[1].qualname) if found else None

    def _assigned_class(self, f: PyFile, name: ast.Name, depth: int = 0) -> tuple[PyFile, Def] | None:
        """The class of the run whose instance a name is bound to by its assignments, if one."""
        found = f.scope_at(name).lookup(name.id)
        if found is None or depth > 4:
            return None
        _, binding = found
        if binding.param_of is not None or binding.imports or binding.defs or len(binding.values) != 1:
            return None
        value = binding.values[0]
        while isinstance(value, ast.Call) and isinstance(value.func, ast.Attribute) and value.func.attr in SELF_METHODS:
            value = value.func.value
        if isinstance(value, ast.Name):
            return self._assigned_class(f, value, depth + 1)
        if not isinstance(value, ast.Call):
            return None
        target = self.def_of(f, value.func)
        return target if target is not None and target[1].kind == "class" else None

    def _param_values(self, f: PyFile, owner: str, name: str, depth: int, seen: frozenset = frozenset()) -> list:
        d = f.def_by_qualname.get(owner)
        if d is None or d.kind != "function":
            return [_UNKNOWN]
        args = d.node.args
        params = [a.arg for a in [*args.posonlyargs, *args.args]]
        is_method = d.parent is not None and f.def_by_qualname.get(d.parent) is not None and \
            f.def_by_qualname[d.parent].kind == "class"
        defaults = dict(zip(params[len(params) - len(args.defaults):], args.defaults))
        defaults.update({a.arg: v for a, v in zip(args.kwonlyargs, args.kw_defaults) if v is not None})
        sites = list(self.calls_of(f.path, owner))
        if is_method and d.node.name == "__init__":
            sites += self.calls_of(f.path, d.parent)
        if not sites:
            annotation = next((a.annotation for a in [*args.posonlyargs, *args.args, *args.kwonlyargs]
                               if a.arg == name and a.annotation is not None), None)
            unknown = [("annotated", f, annotation)] if annotation is not None else [_UNKNOWN]
            return self.values(f, defaults[name], depth + 1, seen) + unknown if name in defaults else unknown
        out: list = []
        for cf, call in sites:
            if any(isinstance(a, ast.Starred) for a in call.args) or any(k.arg is None for k in call.keywords):
                out.append(_UNKNOWN)
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
                out.append(_UNKNOWN)
            if len(out) > ap.MAX_ALTERNATIVES:
                return [_UNKNOWN]
        return out

    # -- path patterns -----------------------------------------------------------------------
    def patterns(self, f: PyFile, node: ast.AST | None, depth: int = 0) -> list[ap.Pattern]:
        """The path patterns an expression may evaluate to."""
        if node is None or depth > _MAX_DEPTH:
            return [(ap.ANY,)]
        key = (id(node), depth)
        if key not in self._patterns:
            self._patterns[key] = self._find_patterns(f, node, depth)
        return list(self._patterns[key])

    def _find_patterns(self, f: PyFile, node: ast.AST, depth: int) -> list[ap.Pattern]:
        out: list[ap.Pattern] = []
        for value in self.values(f, node, depth):
            if value is _UNKNOWN or value[0] in ("def", "annotated"):
                out.append((ap.ANY,))
            else:
                out.extend(self._pattern_of(value[0], value[1], depth + 1))
            if len(out) > ap.MAX_ALTERNATIVES:
                return [(ap.ANY,)]
        return list(dict.fromkeys(out)) or [(ap.ANY,)]

    def _product(self, f: PyFile, parts: list, depth: int, combine) -> list[ap.Pattern]:
        options: list[list[ap.Pattern]] = []
        for part in parts:
            options.append([(part,)] if isinstance(part, str) else self.patterns(f, part, depth))
        results: list[list[ap.Pattern]] = [[]]
        for opts in options:
            results = [r + [o] for r in results for o in opts]
            if len(results) > ap.MAX_ALTERNATIVES:
                return [(ap.ANY,)]
        return [combine(r) for r in results]

    def _pattern_of(self, f: PyFile, node: ast.AST, depth: int) -> list[ap.Pattern]:
        if isinstance(node, ast.Constant):
            return [(node.value,)] if isinstance(node.value, str) else [(ap.ANY,)]
        if isinstance(node, ast.JoinedStr):
            parts = [v.value if isinstance(v, ast.Constant) else v.value for v in node.values]
            return self._product(f, parts, depth, lambda ps: ap.concat(*ps))
        if isinstance(node, ast.BinOp):
            if isinstance(node.op, ast.Add):
                return self._product(f, [node.left, node.right], depth, lambda ps: ap.concat(*ps))
            if isinstance(node.op, ast.Div):
                return self._product(f, [node.left, node.right], depth, ap.join)
            if isinstance(node.op, ast.Mod) and isinstance(node.left, ast.Constant) and isinstance(node.left.value, str):
                import re

                return [ap.normalize(tuple(ap.ANY if i % 2 else p for i, p in enumerate(re.split(r"(%[-#0 +]*\d*(?:\.\d+)?[sdrifgx])", node.left.value))))]
            return [(ap.ANY,)]
        if isinstance(node, ast.Call):
            return self._call_pattern(f, node, depth)
        return [(ap.ANY,)]

    def _call_pattern(self, f: PyFile, node: ast.Call, depth: int) -> list[ap.Pattern]:
        name = self.qualified(f, node.func) or ""
        args = list(node.args)
        if name in ("os.path.join", "posixpath.join", "ntpath.join", "pathlib.Path", "pathlib.PurePath",
                    "pathlib.PosixPath", "pathlib.PurePosixPath") and args and not node.keywords:
            return self._product(f, args, depth, ap.join)
        if name in ("builtins.str", "os.fspath", "os.path.abspath", "os.path.realpath", "os.path.normpath",
                    "os.path.expanduser", "builtins.open") and args:
            return self.patterns(f, args[0], depth)
        if name in ("io.BytesIO", "io.StringIO"):
            return [ap.buffer(f"{f.path}:{node.lineno}:{node.col_offset}")]
        if isinstance(node.func, ast.Attribute):
            method = node.func.attr
            receiver = node.func.value
            if method == "format" and isinstance(receiver, ast.Constant) and isinstance(receiver.value, str):
                import re

                return [ap.normalize(tuple(ap.ANY if i % 2 else p for i, p in enumerate(re.split(r"(\{[^{}]*\})", receiver.value))))]
            if method == "joinpath":
                return self._product(f, [receiver, *args], depth, ap.join)
            if method in ("resolve", "absolute", "expanduser", "as_posix", "__fspath__"):
                return self.patterns(f, receiver, depth)
            if method == "with_suffix" and args and isinstance(args[0], ast.Constant) and isinstance(args[0].value, str):
                return [(ap.ANY, args[0].value)]
            if method == "with_name" and args and isinstance(args[0], ast.Constant) and isinstance(args[0].value, str):
                return [(ap.ANY, "/" + args[0].value)]
        return [(ap.ANY,)]

    # -- what a value is ---------------------------------------------------------------------
    def origins(self, f: PyFile, node: ast.AST, depth: int = 0, env: "Env | None" = None) -> list:
        """Where a (TorchScript) object comes from: producing sites, ``("instance", file, def)`` of
        a class, or :data:`_UNKNOWN`."""
        if depth > _MAX_DEPTH:
            return [_UNKNOWN]
        # the sources and sites never change: each question is answered once (a call's
        # arguments, env, are made once per call: see _call_env)
        key = (id(node), depth, id(env) if env is not None else None)
        known = self._origins.get(key)
        if known is None:
            known = self._origins[key] = _distinct(self._find_origins(f, node, depth, env))
        return list(known)

    def _find_origins(self, f: PyFile, node: ast.AST, depth: int, env: "Env | None") -> list:
        out = []
        for value in self.values(f, node, depth, env=env):
            if value is _UNKNOWN:
                out.append(_UNKNOWN)
                continue
            if value[0] == "def":
                site = self._decorator_site(value[1], value[2])
                out.append(site if site is not None else value)
                continue
            if value[0] == "annotated":
                out.append(_UNKNOWN)
                continue
            vf, expr = value
            site = self._site_at(vf, expr)
            if site is not None and site.kind in (ENTRY_SCRIPT, ENTRY_TRACE, READER):
                out.append(site)
                continue
            if isinstance(expr, ast.Call):
                name = self.qualified(vf, expr.func)
                if name in PASS_THROUGH and expr.args:
                    out.extend(self.origins(vf, expr.args[0], depth + 1, env))
                    continue
                if isinstance(expr.func, ast.Attribute) and expr.func.attr in SELF_METHODS:
                    out.extend(self.origins(vf, expr.func.value, depth + 1, env))
                    continue
                found = self.lookup_def(name, vf.path) if name else None
                if found is None and name and not self.in_run(name, vf.path) and not name.startswith("builtins."):
                    out.append(("external", name))  # made by a library: none of the run's code
                    continue
                if found is not None and found[1].kind == "class":
                    out.append(("instance", found[0], found[1]))
                    continue
                if found is not None and found[1].kind == "function":
                    returns = [r.value for r in returns_of(found[1].node) if r.value is not None]
                    call_env = self._call_env(vf, expr, found[0], found[1])
                    out.extend(o for r in returns for o in self.origins(found[0], r, depth + 1, call_env))
                    if not returns:
                        out.append(_UNKNOWN)
                    continue
                out.append(_UNKNOWN)
                continue
            if isinstance(expr, (ast.Name, ast.Attribute)):
                found = self.def_of(vf, expr)
                if found is not None:
                    site = self._decorator_site(found[0], found[1])
                    out.append(site if site is not None else ("def", found[0], found[1]))
                    continue
            out.append(_UNKNOWN)
        return out

    def _call_env(self, cf: PyFile, call: ast.Call, f: PyFile, d: Def) -> "Env | None":
        """The arguments a call passes to the parameters of the function it calls (one object per
        call and function, so that questions asked in it are remembered)."""
        key = (id(call), f.path, d.qualname)
        if key not in self._envs:
            self._envs[key] = self._make_env(cf, call, f, d)
        return self._envs[key]

    def _make_env(self, cf: PyFile, call: ast.Call, f: PyFile, d: Def) -> "Env | None":
        if any(isinstance(a, ast.Starred) for a in call.args) or any(k.arg is None for k in call.keywords):
            return None
        args = d.node.args
        params = [a.arg for a in [*args.posonlyargs, *args.args]]
        bound = {p: (cf, a) for p, a in zip(params, call.args)}
        bound.update({k.arg: (cf, k.value) for k in call.keywords if k.arg in params or k.arg in {a.arg for a in args.kwonlyargs}})
        defaults = dict(zip(params[len(params) - len(args.defaults):], args.defaults))
        defaults.update({a.arg: v for a, v in zip(args.kwonlyargs, args.kw_defaults) if v is not None})
        for p, v in defaults.items():
            bound.setdefault(p, (f, v))
        # Calls that pass the same things share one Env: `return make(kind)` in each branch of a
        # factory passes the same `kind`, and asking again for each branch's call would follow
        # every path through a chain of factories. A name passed is the same argument wherever
        # it is written in one scope (its values are those of its binding there).
        content = ((f.path, d.qualname), tuple(sorted((p, _argument_key(af, a)) for p, (af, a) in bound.items())))
        if content not in self._envs_by_content:
            self._envs_by_content[content] = Env((f.path, d.qualname), bound)
        return self._envs_by_content[content]

    def targets(self, f: PyFile, node: ast.AST | None, depth: int = 0) -> tuple[set[tuple[str, str]], bool]:
        """Definitions of the run that a scripted or traced object is made from, and whether some
        part of it cannot be followed (then it may be any code of the run)."""
        if node is None:
            return set(), True
        key = (id(node), depth)  # as origins: each question once (a name scripted again and again
        known = self._targets.get(key)  # reached the same sites by every path, exponentially)
        if known is None:
            known = self._targets[key] = self._find_targets(f, node, depth)
        return set(known[0]), known[1]

    def _find_targets(self, f: PyFile, node: ast.AST, depth: int) -> tuple[frozenset, bool]:
        found: set[tuple[str, str]] = set()
        unknown = False
        for origin in self.origins(f, node, depth):
            if origin is _UNKNOWN:
                unknown = True
            elif isinstance(origin, Site):
                if origin.kind in (ENTRY_SCRIPT, ENTRY_TRACE):
                    inner, u = self.targets(origin.file, first_arg(origin.node, "obj", "func", "mod"), depth + 1)
                    found |= inner
                    unknown |= u
                elif origin.kind == ENTRY_DECORATOR:
                    d = origin.file.innermost_def(origin.start)
                    if d is not None:
                        found.add((origin.file.path, d.qualname))
                else:
                    unknown = True  # a loaded artifact: its code is not in the run
            elif origin[0] in ("instance", "def"):
                found.add((origin[1].path, origin[2].qualname))
        return frozenset(found), unknown

    # -- sites -------------------------------------------------------------------------------
    def _find_sites(self, f: PyFile) -> None:
        for node in f.walk():
            if isinstance(node, ast.Call):
                self._call_site(f, node)
            elif isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
                for dec in node.decorator_list:
                    target = dec.func if isinstance(dec, ast.Call) else dec
                    name = self.qualified(f, target)
                    if name == SCRIPT:
                        self._add(ENTRY_DECORATOR, f, dec, name)
                    elif name == SCRIPT_IF_TRACING:
                        self._add(ENTRY_IF_TRACING, f, dec, name)
                if isinstance(node, ast.ClassDef):
                    for base in node.bases:
                        if self.qualified(f, base) in SCRIPT_MODULES:
                            self._add(ENTRY_CLASS, f, base, "torch.jit.ScriptModule")

    def _add(self, kind: str, f: PyFile, node: ast.AST, api: str) -> Site:
        start, end = f.start(node), f.end(node)
        d = f.innermost_def(start)
        site = Site(kind, f, node, start, end, d.qualname if d else "", f.text(node), api)
        self.sites.append(site)
        return site

    def _call_site(self, f: PyFile, node: ast.Call) -> None:
        name = self.qualified(f, node.func)
        if name == SCRIPT:
            self._add(ENTRY_SCRIPT, f, node, name)
        elif name in (TRACE, TRACE_MODULE):
            self._add(ENTRY_TRACE, f, node, name)
        elif name == JIT_LOAD or name in LITE_LOADS:
            site = self._add(READER, f, node, name)
            site.patterns = self.patterns(f, first_arg(node, "f"))
        elif name in PASS_THROUGH:
            self._add(TRANSFORM, f, node, name)
        elif name == JIT_SAVE:
            site = self._add(WRITER, f, node, name)
            site.patterns = self.patterns(f, _arg(node, 1, "f"))
        elif isinstance(node.func, ast.Attribute) and node.func.attr in SAVE_METHODS and name is None:
            # a method of an object (`torch.save`, `np.save` are functions of modules: not ours)
            site = self._add(WRITER, f, node, "." + node.func.attr)
            site.writes_lite = SAVE_METHODS[node.func.attr] == "lite-save"
            path = first_arg(node, "f") if node.func.attr != "_save_to_buffer_for_lite_interpreter" else None
            site.patterns = self.patterns(f, path) if path is not None else [ap.buffer(f"{f.path}:{node.lineno}")]

    def _site_at(self, f: PyFile, node: ast.AST) -> Site | None:
        start = f.start(node) if hasattr(node, "lineno") else None
        for s in self._sites_by_file().get(f.path, ()):
            if s.node is node or (start is not None and s.start == start and s.end == f.end(node) and s.kind != WRITER):
                return s
        return None

    def _decorator_site(self, f: PyFile, d: Def) -> Site | None:
        for s in self._sites_by_file().get(f.path, ()):
            if s.kind == ENTRY_DECORATOR and d.contains(s.start) and d.start <= s.start < (d.node.lineno, 0):
                return s
        return None

    def _sites_by_file(self) -> dict[str, list[Site]]:
        if getattr(self, "_by_file", None) is None or self._by_file_count != len(self.sites):
            self._by_file: dict[str, list[Site]] = {}
            for s in self.sites:
                self._by_file.setdefault(s.file.path, []).append(s)
            self._by_file_count = len(self.sites)
        return self._by_file

    def _link(self) -> None:
        """Writers to the objects they save; readers to writers of a path that may match."""
        self.writer_origins: dict[int, list] = {}
        for s in self.sites:
            if s.kind != WRITER:
                continue
            receiver = first_arg(s.node, "m") if s.api == JIT_SAVE else s.node.func.value
            self.writer_origins[id(s)] = self.origins(s.file, receiver) if receiver is not None else [_UNKNOWN]
        writers = [s for s in self.sites if s.kind == WRITER]
        self.links: dict[int, list[Site]] = {}
        for r in (s for s in self.sites if s.kind == READER):
            for w in writers:
                if any(ap.may_match(p, q) for p in r.patterns for q in w.patterns):
                    self.links.setdefault(id(r), []).append(w)
                    self.links.setdefault(id(w), []).append(r)
        self._units()

    def _units(self) -> None:
        """Units: an entry point with the writers of its value, the readers of their paths, and
        the ScriptModule classes whose instances they save (only TorchScript writers count)."""
        parent: dict[int, Site] = {id(s): s for s in self.sites}

        def find(s: Site) -> Site:
            while parent[id(s)] is not s:
                s = parent[id(s)]
            return s

        def union(a: Site, b: Site) -> None:
            ra, rb = find(a), find(b)
            if ra is not rb:
                parent[id(rb)] = ra

        classes = {(s.file.path, s.file.innermost_def(s.start).qualname): s for s in self.sites
                   if s.kind == ENTRY_CLASS and s.file.innermost_def(s.start) is not None}
        writers = {id(s) for s in self.sites if self.is_writer(s)}
        for s in self.sites:
            if s.kind == TRANSFORM:
                arg = first_arg(s.node, "mod", "module", "script_module")
                for o in (self.origins(s.file, arg) if arg is not None else ()):
                    if isinstance(o, Site):
                        union(s, o)
            if id(s) not in writers:
                continue
            for o in self.writer_origins[id(s)]:
                if isinstance(o, Site):
                    union(s, o)
                elif isinstance(o, tuple) and o[0] == "instance":
                    for cls in self._script_module_roots(o[1], o[2]):
                        if cls in classes:
                            union(s, classes[cls])
            for r in self.links.get(id(s), ()):
                union(r, s)
        for a, b in self._value_links():
            union(a, b)
        for fi in getattr(self, "findings", ()):  # sites rewritten by one fix go together
            if not fi.fix_spans:
                continue
            own = [s for s in self._sites_by_file().get(fi.path, ()) if fi in s.findings]
            for s in self._sites_by_file().get(fi.path, ()):
                if _covers(fi, s):
                    for o in own:
                        union(o, s)
        units: dict[int, Unit] = {}
        for s in self.sites:
            unit = units.setdefault(id(find(s)), Unit())
            unit.sites.append(s)
            s.unit = unit
        for unit in units.values():
            unit.sites.sort(key=lambda s: (s.file.path, s.start))
            first = next((s for s in unit.sites if s.kind in (ENTRY_SCRIPT, ENTRY_TRACE, ENTRY_CLASS)), unit.sites[0])
            unit.label = f"{first.where} {first.text}"
        self.units = list(units.values())

    def _embedded_sites(self, site: Site) -> list[Site]:
        """Scripts, traces and loads whose result becomes part of what ``site`` scripts or traces:
        inside its argument (`torch.jit.script(Seq(torch.jit.script(layer)))`), in the factory
        functions that build it, or in the classes it instantiates (`self.enc = torch.jit.load(p)`).
        torch.export cannot export through a ScriptModule, and TorchScript cannot script an exported
        module: they migrate together."""
        arg = first_arg(site.node, "obj", "func", "mod")
        if arg is None:
            return []
        f = site.file
        scopes: set[tuple[str, str]] = set()
        spans = [(f.path, f.start(arg), f.end(arg))]
        todo, seen = [(f, arg, 0)], set()
        while todo:
            vf, node, depth = todo.pop()
            if depth > 3 or (vf.path, id(node)) in seen:
                continue
            seen.add((vf.path, id(node)))
            for value in self.values(vf, node, depth):
                if value is _UNKNOWN or value[0] in ("def", "annotated"):
                    continue
                wf, expr = value
                if not isinstance(expr, ast.Call):
                    continue
                spans.append((wf.path, wf.start(expr), wf.end(expr)))
                name = self.qualified(wf, expr.func)
                found = self.lookup_def(name, wf.path) if name else None
                if found is None:
                    continue
                scopes.add((found[0].path, found[1].qualname))
                if found[1].kind == "function":
                    for r in returns_of(found[1].node):
                        if r.value is not None:
                            todo.append((found[0], r.value, depth + 1))
        out = []
        for s in self.sites:
            if s is site or s.kind not in (ENTRY_SCRIPT, ENTRY_TRACE, READER):
                continue
            inside = any(p == s.file.path and a <= s.start and s.end <= b for p, a, b in spans)
            within = any(p == s.file.path and (s.scope == q or s.scope.startswith(q + ".")) for p, q in scopes)
            if inside or within:
                out.append(s)
        return out

    def _value_links(self) -> list[tuple[Site, Site]]:
        """Pairs of sites joined because a value made at one becomes part of the other (see
        :meth:`_embedded_sites` and :meth:`_instance_flows`). The sources never change: found once,
        though units are formed again when the findings are attached."""
        if self._links_by_value is None:
            pairs = self._instance_flows()
            for s in self.sites:
                if s.kind in (ENTRY_SCRIPT, ENTRY_TRACE):
                    pairs.extend((s, inner) for inner in self._embedded_sites(s))
            self._links_by_value = pairs
        return self._links_by_value

    def _instance_flows(self) -> list[tuple[Site, Site]]:
        """A TorchScript class (`@torch.jit.script class C`) whose instances are passed to a scripted
        function (`apply(C(), x)`, `c = C(); apply(c, x)`) goes with it: a scripted function that
        stays takes only TorchScript values, so the class cannot lose its decorator alone."""
        classes: dict[tuple[str, str], Site] = {}
        functions: list[tuple[Site, Def]] = []
        for s in self.sites:
            if s.kind != ENTRY_DECORATOR:
                continue
            d = s.file.innermost_def(s.start)
            if d is None:
                continue
            if d.kind == "class":
                classes[(s.file.path, d.qualname)] = s
            else:
                functions.append((s, d))
        pairs: list[tuple[Site, Site]] = []
        if not classes:
            return pairs
        for site, d in functions:
            for f, call in self.calls_of(site.file.path, d.qualname):
                for arg in [*call.args, *(k.value for k in call.keywords)]:
                    made = None
                    if isinstance(arg, ast.Call):
                        made = self.def_of(f, arg.func)
                    elif isinstance(arg, ast.Name):
                        made = self._assigned_class(f, arg)
                    if made is not None and (made[0].path, made[1].qualname) in classes:
                        pairs.append((site, classes[(made[0].path, made[1].qualname)]))
        return pairs

    def _script_module_roots(self, f: PyFile, d: Def, depth: int = 0) -> list[tuple[str, str]]:
        """The ScriptModule subclasses (naming ``torch.jit.ScriptModule`` directly) that ``d`` is or
        derives from."""
        if depth > _MAX_DEPTH or d.kind != "class":
            return []
        key = (f.path, d.qualname, depth)
        if key not in self._roots:
            self._roots[key] = self._find_roots(f, d, depth)
        return list(self._roots[key])

    def _find_roots(self, f: PyFile, d: Def, depth: int) -> list[tuple[str, str]]:
        out = []
        for base in d.node.bases:
            if self.qualified(f, base) in SCRIPT_MODULES:
                out.append((f.path, d.qualname))
                continue
            found = self.def_of(f, base)
            if found is not None:
                out.extend(self._script_module_roots(found[0], found[1], depth + 1))
        return out

    def is_writer(self, s: Site) -> bool:
        """A `.save(...)` call is a TorchScript writer when a rule reported it or what it saves
        comes from TorchScript."""
        if s.kind != WRITER:
            return False
        if s.api == JIT_SAVE or s.findings:
            return True
        for o in self.writer_origins.get(id(s), ()):
            if isinstance(o, Site):
                return True
            if isinstance(o, tuple) and o[0] == "instance" and self._script_module_roots(o[1], o[2]):
                return True
        return False

    # -- reach -------------------------------------------------------------------------------
    def reach(self, site: Site) -> tuple[set[tuple[str, str]], bool]:
        """Definitions an entry point compiles or traces, and whether it may reach unknown code."""
        f = site.file
        if site.kind in (ENTRY_DECORATOR, ENTRY_IF_TRACING, ENTRY_CLASS):
            d = f.innermost_def(site.start)
            roots = {(f.path, d.qualname)} if d is not None else set()
            unknown = False
            if site.kind == ENTRY_CLASS and d is not None:
                roots |= self._subclasses(f.path, d.qualname)
        else:
            roots, unknown = self.targets(f, first_arg(site.node, "obj", "func", "mod"))
        out: set[tuple[str, str]] = set()
        for root in roots:
            out |= self._closure(root)
        return out, unknown

    def _subclasses(self, path: str, qualname: str) -> set[tuple[str, str]]:
        out = set()
        name = qualname.rsplit(".", 1)[-1].encode()
        for p, data in self.sources.items():
            f = self.file(p) if name in data else None
            if f is None:
                continue
            for d in f.defs:
                if d.kind == "class":
                    for base in d.node.bases:
                        found = self.def_of(f, base)
                        if found is not None and (found[0].path, found[1].qualname) == (path, qualname):
                            out.add((f.path, d.qualname))
        return out

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
            f = self.file(key[0])
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
            found = self.def_of(f, node)
            if found is not None:
                out.add((found[0].path, found[1].qualname))
        return out

    # -- solving ---------------------------------------------------------------------------
    def attach(self, findings: Iterable[ScanFinding]) -> None:
        """Give each site the findings of the first pass that report it."""
        by_file = self._sites_by_file()
        self.findings = list(findings)
        for s in self.sites:
            s.findings = []
        for fi in self.findings:
            for s in by_file.get(fi.path, ()):
                if (fi.start, fi.end) == (s.start, s.end) or (
                    s.kind in (ENTRY_DECORATOR, ENTRY_IF_TRACING, ENTRY_CLASS)
                    and fi.start <= s.start and s.end <= fi.end and fi.start[0] == s.start[0]
                ):
                    s.findings.append(fi)
        self._units()

    def solve(self, extra_held: dict[tuple[str, str], str] | None = None) -> Decision:
        """Which fixes to hold back, and why. ``extra_held``: (path, anchor) -> reason, fixes the
        engine could not apply (their units wait too)."""
        held: dict[tuple[str, str], str] = dict(extra_held or {})
        writers = {id(s) for s in self.sites if self.is_writer(s)}
        sites = [s for s in self.sites if s.kind != WRITER or id(s) in writers]
        reach = {id(s): self.reach(s) for s in sites if s.kind not in (WRITER, READER)}

        covering: dict[int, list[ScanFinding]] = {}  # site -> findings whose fix rewrites it
        for fi in self.findings:
            for site in self._sites_by_file().get(fi.path, ()):
                if fi.fix_spans and _covers(fi, site) and fi not in site.findings:
                    covering.setdefault(id(site), []).append(fi)

        def fixable(fi: ScanFinding) -> bool:
            return fi.fixable and fi.key not in held

        def goes(s: Site) -> bool:
            return any(fixable(fi) for fi in [*s.findings, *covering.get(id(s), ())])

        def hold(fi: ScanFinding, reason: str) -> bool:
            if fi.fixable and fi.key not in held:
                held[fi.key] = reason
                return True
            return False

        def stays(s: Site) -> str:
            """Why a call site stays TorchScript, as a predicate ("stays TorchScript (...)")."""
            for fi in s.findings:
                if fi.key in held:
                    return f"is held back ({held[fi.key]})"
            for fi in s.findings:
                if not fi.fixable:
                    return f"stays TorchScript (see {fi.rule_id} there)"
            return "stays TorchScript"

        changed = True
        rounds = 0
        while changed and rounds < 50:
            changed = False
            rounds += 1
            # 1. units: all their call sites migrate, or none
            for unit in self.units:
                members = [s for s in unit.sites if s.kind != WRITER or id(s) in writers]
                blockers: list[tuple[Site, str]] = []  # (site, why it stays, as a predicate)
                order = {ENTRY_SCRIPT: 0, ENTRY_TRACE: 0, READER: 1, WRITER: 2}
                for s in sorted(members, key=lambda s: order.get(s.kind, 3)):
                    if s.kind == READER and not self.external_readers and not any(
                            id(w) in writers for w in self.links.get(id(s), ())):
                        shown = " or ".join(sorted({ap.shown(p) for p in s.patterns}))
                        blockers.append((s, (
                            f"reads `{shown}`, which no checked file writes: artifacts made elsewhere must be converted "
                            "first (`ts2export convert`, same path), then run apply with `--external-readers`")))
                    elif s.kind in CALL_SITES and not goes(s):
                        blockers.append((s, stays(s)))
                    elif s.kind == ENTRY_DECORATOR and len(members) > 1 and not goes(s):
                        blockers.append((s, stays(s)))  # what it compiles keeps its TorchScript values
                    elif s.kind == TRANSFORM and not goes(s):
                        # what it transforms cannot migrate without it (the reverse is fine)
                        blockers.append((s, stays(s)))
                if not blockers:
                    continue
                blocker, why = blockers[0]
                for s in members:
                    if s.kind == TRANSFORM and s is not blocker:
                        continue  # `freeze(m)` may go while `m` stays TorchScript
                    reason = why if s is blocker else f"it migrates together with {blocker.describe()}, which {why}"
                    if s is blocker:
                        reason = f"{s.describe()} {why}"
                    for fi in [*s.findings, *covering.get(id(s), ())]:
                        changed |= hold(fi, reason)
            # 2. code that TorchScript still compiles or traces
            compiled, traced, unknown_compiled, unknown_traced = self._staying_reach(sites, reach, goes)
            for fi in self.findings:
                if not fixable(fi) or not fi.defs:
                    continue
                why = self._region_reason(fi.path, fi.defs, compiled, traced, unknown_compiled, unknown_traced,
                                          fi.keeps_torchscript, fi.keeps_tracing)
                if why:
                    changed |= hold(fi, why)
            # 3. exports that would fail on code left as it is
            for s in sites:
                if s.kind not in (ENTRY_SCRIPT, ENTRY_TRACE) or not goes(s):
                    continue
                defs, _unknown = reach[id(s)]
                for fi in self.findings:
                    if not fi.blocks_export or fixable(fi):
                        continue
                    if any((fi.path, q) in defs for q in fi.defs):
                        why = (f"torch.export would stop at {fi.rule_id} in `{fi.defs[-1]}` ({fi.where}), which "
                               + ("is held back" if fi.fixable else "has no automatic fix"))
                        for own in s.findings:
                            changed |= hold(own, why)
                        break
        return self._decision(held, sites, reach, goes)

    def _staying_reach(self, sites, reach, goes):
        compiled: dict[tuple[str, str], Site] = {}
        traced: dict[tuple[str, str], Site] = {}
        unknown_compiled: Site | None = None
        unknown_traced: Site | None = None
        for s in sites:
            if s.kind in (WRITER, READER) or goes(s):
                continue
            defs, unknown = reach[id(s)]
            table = compiled if s.kind in COMPILERS else traced
            for key in defs:
                table.setdefault(key, s)
            if unknown:
                if s.kind in COMPILERS and unknown_compiled is None:
                    unknown_compiled = s
                elif s.kind not in COMPILERS and unknown_traced is None:
                    unknown_traced = s
        return compiled, traced, unknown_compiled, unknown_traced

    def _region_reason(self, path, defs, compiled, traced, unknown_compiled, unknown_traced, keeps_ts, keeps_tr) -> str | None:
        for keeps, table, unknown, verb in ((keeps_ts, compiled, unknown_compiled, "compiled"),
                                            (keeps_tr, traced, unknown_traced, "traced")):
            if keeps:
                continue
            for q in defs:
                s = table.get((path, q))
                if s is not None:
                    return f"`{q}` is still {verb} by TorchScript through {s.describe()}, which stays"
            if unknown is not None and self._compilable(path, defs):
                return (f"this code may be {verb} by TorchScript through {unknown.describe()}, which stays "
                        "and whose target ts2export cannot follow")
        return None

    def _compilable(self, path: str, defs: Sequence[str]) -> bool:
        """Whether the code at ``defs`` could be compiled by TorchScript at all: not when its
        top-level definition calls TorchScript's own entry points, loads or saves (TorchScript
        cannot compile those), nor at module level."""
        if not defs:
            return False
        top = defs[-1]
        for s in self._sites_by_file().get(path, ()):
            if s.kind in (ENTRY_SCRIPT, ENTRY_TRACE, READER, WRITER) and (s.scope == top or s.scope.startswith(top + ".")):
                return False
        return True

    def _decision(self, held, sites, reach, goes) -> Decision:
        out = Decision()
        for fi in self.findings:
            if fi.key in held:
                out.held.setdefault(fi.path, {})[fi.anchor] = held[fi.key]
        compiled, traced, unknown_compiled, unknown_traced = self._staying_reach(sites, reach, goes)
        for path in sorted({fi.path for fi in self.findings}):  # regions are asked of findings only
            f = self.file(path)
            if f is None:
                continue
            regions = {}
            for d in f.defs:
                c = self._region_reason(path, [d.qualname], compiled, {}, unknown_compiled, None, False, True)
                t = self._region_reason(path, [d.qualname], {}, traced, None, unknown_traced, True, False)
                if c or t:
                    regions[d.qualname] = (c, t)
            if regions:
                out.regions[path] = regions
        for s in sites:
            for fi in s.findings:
                out.units.setdefault(fi.path, {})[fi.anchor] = s.unit.label if s.unit else ""
        for fi in self.findings:
            if fi.anchor in out.units.get(fi.path, {}):
                continue
            for s in sites:
                if s.kind in (WRITER, READER):
                    continue
                defs, _ = reach[id(s)]
                if any((fi.path, q) in defs for q in fi.defs):
                    out.units.setdefault(fi.path, {})[fi.anchor] = s.unit.label if s.unit else ""
                    break
        return out

    # -- what rules may ask --------------------------------------------------------------------
    def views(self) -> dict[str, ProgramView]:
        """Per file, what its names are in the run (see :class:`ts2export.rule.ProgramView`)."""
        from ts2export.entry_inputs import InputFinder

        finder = InputFinder(self)
        out: dict[str, ProgramView] = {}
        for path, f in list(self.files.items()):
            if b"jit" not in f.source:
                continue
            kinds: dict[str, str] = {}
            for node in f.walk():
                if not isinstance(node, (ast.Name, ast.Attribute)):
                    continue
                name = self.qualified(f, node)
                if not name or name in kinds or name.startswith(("torch.", "builtins.")):
                    continue
                found = self.lookup_def(name, f.path)
                if found is None:
                    continue
                df, d = found
                kind = d.kind
                if kind == "class" and self._script_module_roots(df, d):
                    kind = "script-module-class"
                kinds[name] = kind
                if df is f:
                    kinds.setdefault(d.qualname, kind)
            objects, inputs, recurrent = {}, {}, {}
            for site in self._sites_by_file().get(path, ()):
                if site.kind in (ENTRY_SCRIPT, ENTRY_TRACE):
                    arg = first_arg(site.node, "obj", "func", "mod")
                    if arg is not None:
                        objects[object_key(site.scope, f.segment(arg))] = self.object_kind(f, arg) or "unknown"
                    evidence = self._recorded(site) or finder.evidence(site)
                    if evidence is not None:
                        inputs[object_key(site.scope, f.segment(site.node))] = evidence
                    layers = self.recurrent_layers(site)
                    if layers:
                        recurrent[object_key(site.scope, f.segment(site.node))] = layers
            out[path] = ProgramView(kinds, objects, inputs, recurrent)
        return out

    def _recorded(self, site: Site) -> dict | None:
        """The inputs a recording saw the module of an entry point called with (``ts2export record``),
        as evidence for the rules: the example code, dynamic shapes with named dims (ranges seen),
        static where nothing varied, and per input and dim the sizes (smallest and largest) seen."""
        if self.recording is None:
            return None
        rec = self.recording.inputs_with_artifacts(site.file.path, site.start[0])
        if rec is None or rec.args_code is None:
            return None
        varying = {(p, d): dim for dim in rec.dims for p, d in dim.members}
        shapes = {p: shape for p, shape, _dtype in rec.shapes}
        sizes = []
        for name in rec.arg_names:
            shape = shapes.get(name)
            if shape is None:
                sizes = []
                break
            sizes.append([[varying[(name, d)].min, varying[(name, d)].max] if (name, d) in varying else [n]
                          for d, n in enumerate(shape)])
        return {
            "example": rec.args_code,
            "kwargs": rec.kwargs_code,
            "dynamic_shapes": rec.dynamic_shapes_inline_code,
            "recorded": True,
            "sizes": sizes,
            "where": [f"recording ({rec.calls} call{'s' if rec.calls != 1 else ''} seen)"],
        }

    def recurrent_layers(self, site: Site) -> tuple[str, ...]:
        """The recurrent layers (nn.GRU/LSTM/RNN) built in the code an entry point reaches: export
        fixes their sequence length."""
        defs, _ = self.reach(site)
        found: set[str] = set()
        for path, qualname in defs:
            f = self.file(path)
            d = f.def_by_qualname.get(qualname) if f is not None else None
            if d is None:
                continue
            for node in ast.walk(d.node):
                if isinstance(node, ast.Call):
                    name = self.qualified(f, node.func) or ""
                    if name in RECURRENT:
                        found.add(name.rsplit(".", 1)[-1])
        return tuple(sorted(found))

    def object_kind(self, f: PyFile, node: ast.AST, seen: frozenset = frozenset(), env: "Env | None" = None) -> str:
        """Whether what ``node`` evaluates to is a module instance, a function, a class, or
        cannot be told: every value it may have must agree (values met again add nothing)."""
        if len(seen) > _MAX_DEPTH:
            return ""
        key = (id(node), len(seen), id(env) if env is not None else None)
        return self._kinds.ask(key, id(node), seen, lambda: self._find_kind(f, node, seen | {id(node)}, env))

    def _find_kind(self, f: PyFile, node: ast.AST, seen: frozenset, env: "Env | None") -> str:
        kinds: set[str] = set()
        for alt in self.values(f, node, env=env):
            kinds.add(self._kind_of_value(alt, seen))
        kinds.discard("")
        if not kinds:
            return ""
        return kinds.pop() if len(kinds) == 1 else "unknown"

    def _kind_of_value(self, alt, seen: frozenset) -> str:
        if alt is _UNKNOWN:
            return "unknown"
        if alt[0] == "def":
            return "function" if alt[2].kind == "function" else "class"
        if alt[0] == "annotated":  # a parameter nothing calls: its annotation says what it is
            name = self.qualified(alt[1], alt[2]) or ""
            if name.endswith(".Module") or name.startswith("torch.nn."):
                return "module"
            found = self.lookup_def(name, alt[1].path) if name else None
            if found is not None and found[1].kind == "class":
                return "module"
            if name.rsplit(".", 1)[-1] == "Callable":
                return "function"
            return "unknown"
        vf, expr = alt
        if isinstance(expr, ast.Lambda):
            return "function"
        if isinstance(expr, ast.Call):
            name = self.qualified(vf, expr.func) or ""
            if name in ("functools.partial", "builtins.getattr"):
                return "unknown"
            if name in (SCRIPT, TRACE, TRACE_MODULE) or name in PASS_THROUGH:
                inner = first_arg(expr, "obj", "func", "mod", "script_module")
                return self.object_kind(vf, inner, seen) if inner is not None else "unknown"
            found = self.lookup_def(name, vf.path) if name else None
            if found is not None and found[1].kind == "function":
                returns = [r.value for r in returns_of(found[1].node) if r.value is not None]
                env = self._call_env(vf, expr, found[0], found[1])
                kinds = {self.object_kind(found[0], r, seen, env) for r in returns} - {""}
                return kinds.pop() if len(kinds) == 1 else "unknown"
            if isinstance(expr.func, ast.Attribute) and expr.func.attr in SELF_METHODS:
                return self.object_kind(vf, expr.func.value, seen)
            return "module"  # an instance made by a constructor or a factory
        if isinstance(expr, (ast.Name, ast.Attribute)):
            name = self.qualified(vf, expr)
            found = self.lookup_def(name, vf.path) if name else None
            if found is not None:
                return "function" if found[1].kind == "function" else "class"
            if name and not self.in_run(name, vf.path) and not name.startswith("builtins."):
                last = name.rsplit(".", 1)[-1]
                return "class" if last[:1].isupper() else "function"
            if isinstance(expr, ast.Attribute) and name is None:
                return self._member_kind(vf, expr, seen)
            return "unknown"
        return "unknown"

    def _member_kind(self, f: PyFile, expr: ast.Attribute, seen: frozenset) -> str:
        """``obj.attr`` where ``obj`` is an instance of a class of the run: a method (a function
        bound to it) or what the class assigns to ``self.attr`` (a submodule, say)."""
        kinds: set[str] = set()
        for origin in self.origins(f, expr.value):
            if not (isinstance(origin, tuple) and origin[0] == "instance"):
                return "unknown"
            cf, cls = origin[1], origin[2]
            if cf.def_by_qualname.get(f"{cls.qualname}.{expr.attr}") is not None:
                kinds.add("function")
                continue
            stores = [sub.value for sub in ast.walk(cls.node) if isinstance(sub, ast.Assign) and len(sub.targets) == 1
                      and isinstance(sub.targets[0], ast.Attribute) and sub.targets[0].attr == expr.attr
                      and isinstance(sub.targets[0].value, ast.Name) and sub.targets[0].value.id == "self"]
            if not stores:
                return "unknown"
            kinds |= {self.object_kind(cf, v, seen) for v in stores}
        kinds.discard("")
        return kinds.pop() if len(kinds) == 1 else "unknown"

    # -- reporting ---------------------------------------------------------------------------
    def unit_files(self, paths: set[str]) -> set[str]:
        """Files of the readers whose unit has its writer (or its entry point) in ``paths``: what a
        change of those files can break elsewhere."""
        out: set[str] = set()
        for unit in self.units:
            if any(s.kind != READER and s.file.path in paths for s in unit.sites):
                out |= {s.file.path for s in unit.sites if s.kind == READER}
        return out - paths

    def artifact_table(self) -> dict[str, list[dict]]:
        """The artifacts as the reports show them (see :mod:`ts2export.program_facts`)."""
        from ts2export.program_facts import artifact_table

        return artifact_table(self)

    def artifacts(self) -> list[tuple[str, list[Site]]]:
        """Each artifact path pattern with the writers and readers linked through it."""
        groups: dict[str, list[Site]] = {}
        writers = {id(s) for s in self.sites if self.is_writer(s)}
        for s in self.sites:
            if s.kind == READER or id(s) in writers:
                for p in s.patterns:
                    groups.setdefault(ap.shown(p), []).append(s)
        return sorted((k, sorted(v, key=lambda s: (s.file.path, s.start))) for k, v in groups.items())


def _distinct(origins: list) -> list:
    """Origins without repeats, in their first order: every question about origins asks which
    there are, never how often one is met (a chain of factories with several returns each meets
    the same class once per path)."""
    seen: set = set()
    out = []
    for o in origins:
        key = tuple(x if isinstance(x, str) else id(x) for x in o) if isinstance(o, tuple) else id(o)
        if key not in seen:
            seen.add(key)
            out.append(o)
    return out


def _argument_key(f: PyFile, node: ast.AST) -> tuple:
    """What an argument of a call is, for sharing Envs: a name by its scope and spelling, any other
    expression by itself."""
    if isinstance(node, ast.Name):
        found = f.scope_at(node).lookup(node.id)
        return ("name", f.path, id(found[0]) if found is not None else None, node.id)
    return ("node", f.path, id(node))


def _covers(fi: ScanFinding, s: Site) -> bool:
    """Whether the fix of ``fi`` rewrites the site (replaces code around it without keeping it)."""
    text = re.sub(r"\s+", "", s.file.segment(s.node))
    return any(a <= s.start and s.end <= b and text not in code for a, b, code in fi.fix_spans)


def _arg(call: ast.Call, index: int, keyword: str) -> ast.AST | None:
    for k in call.keywords:
        if k.arg == keyword:
            return k.value
    positional = [a for a in call.args if not isinstance(a, ast.Starred)]
    return positional[index] if len(positional) > index else None

