"""Where a (TorchScript) object comes from, and what code of the run it is made from.

An object's *origins* are the sites that produce it (a script, a trace, a load), the classes it
is an instance of, the definitions it names, ``("external", name)`` for what a library makes, or
:data:`UNKNOWN`. They are followed through the values a name may have, ``.eval()``-like calls and
freeze-like passes, and into the returns of the run's factories (with each call's arguments).
An entry point's *targets* are the definitions its object is made from.
"""

from __future__ import annotations

import ast

from typing import TYPE_CHECKING

from ts2export.model.memo import MAX_DEPTH
from ts2export.model.names import Names
from ts2export.model.pyfile import Def, PyFile, first_arg, returns_of
from ts2export.model.sites import ENTRY_DECORATOR, ENTRY_SCRIPT, ENTRY_TRACE, READER, Site, Sites
from ts2export.model.torchapi import PASS_THROUGH, SELF_METHODS
from ts2export.model.values import UNKNOWN, Env, Values

if TYPE_CHECKING:
    from ts2export.model.classes import Classes


class Origins:
    def __init__(self, names: Names, values: Values, sites: Sites, classes: "Classes | None" = None) -> None:
        self.names = names
        self.values = values
        self.sites = sites
        self.classes = classes  # for `self`: the method's class and its subclasses
        self._origins: dict[tuple, list] = {}  # (id(node), depth, id(env)) -> origins's answer
        self._targets: dict[tuple[int, int], tuple[frozenset, bool]] = {}  # (id(node), depth) -> targets's answer
        self._envs: dict[tuple, Env | None] = {}  # (id(call), path, qualname) -> call_env's answer
        self._envs_by_content: dict[tuple, Env] = {}  # see _make_env

    def origins(self, f: PyFile, node: ast.AST, depth: int = 0, env: "Env | None" = None) -> list:
        """Where a (TorchScript) object comes from: producing sites, ``("instance", file, def)`` of
        a class, or :data:`UNKNOWN`."""
        if depth > MAX_DEPTH:
            return [UNKNOWN]
        # the sources and sites never change: each question is answered once (a call's
        # arguments, env, are made once per call: see call_env)
        key = (id(node), depth, id(env) if env is not None else None)
        known = self._origins.get(key)
        if known is None:
            known = self._origins[key] = _distinct(self._find_origins(f, node, depth, env))
        return list(known)

    def _find_origins(self, f: PyFile, node: ast.AST, depth: int, env: "Env | None") -> list:
        own = self.self_classes(f, node)
        if own is not None:
            return [("instance", cf, cd) for cf, cd in own]
        out = []
        for value in self.values.values(f, node, depth, env=env):
            if value is UNKNOWN:
                out.append(UNKNOWN)
                continue
            if value[0] == "def":
                site = self.sites.decorator(value[1], value[2])
                out.append(site if site is not None else value)
                continue
            if value[0] == "annotated":
                out.append(UNKNOWN)
                continue
            vf, expr = value
            site = self.sites.at(vf, expr)
            if site is not None and site.kind in (ENTRY_SCRIPT, ENTRY_TRACE, READER):
                out.append(site)
                continue
            if isinstance(expr, ast.Call):
                name = self.names.qualified(vf, expr.func)
                if name in PASS_THROUGH and expr.args:
                    out.extend(self.origins(vf, expr.args[0], depth + 1, env))
                    continue
                if isinstance(expr.func, ast.Attribute) and expr.func.attr in SELF_METHODS:
                    out.extend(self.origins(vf, expr.func.value, depth + 1, env))
                    continue
                if name is None and isinstance(expr.func, ast.Call):
                    looked_up = self._looked_up(vf, expr.func, depth, env)
                    if looked_up is not None:  # getattr(zoo, name)(...): each class or factory it names
                        for found in looked_up:
                            out.extend(self._made_by(vf, expr, found, depth) if found is not None else [UNKNOWN])
                        continue
                found = self.names.lookup_def(name, vf.path) if name else None
                if found is None and name and not self.names.in_run(name, vf.path) and not name.startswith("builtins."):
                    out.append(("external", name))  # made by a library: none of the run's code
                    continue
                out.extend(self._made_by(vf, expr, found, depth) if found is not None else [UNKNOWN])
                continue
            if isinstance(expr, (ast.Name, ast.Attribute)):
                found = self.names.def_of(vf, expr)
                if found is not None:
                    site = self.sites.decorator(found[0], found[1])
                    out.append(site if site is not None else ("def", found[0], found[1]))
                    continue
            out.append(UNKNOWN)
        return out

    def _made_by(self, vf: PyFile, call: ast.Call, found: tuple[PyFile, Def], depth: int) -> list:
        """Origins of what a call of a definition of the run makes: an instance of a class, what a
        factory returns (followed with the call's arguments)."""
        if found[1].kind == "class":
            return [("instance", found[0], found[1])]
        returns = [r.value for r in returns_of(found[1].node) if r.value is not None]
        if not returns:
            return [UNKNOWN]
        call_env = self.call_env(vf, call, found[0], found[1])
        return [o for r in returns for o in self.origins(found[0], r, depth + 1, call_env)]

    def _looked_up(self, f: PyFile, call: ast.Call, depth: int, env: "Env | None") -> list | None:
        """The definitions ``getattr(module, name)`` may give, one per value of ``name`` (None in
        the place of one that is not a string naming a definition of the run), or None when
        ``call`` is not such a lookup in a module or class of the run."""
        if (self.names.qualified(f, call.func) != "builtins.getattr" or len(call.args) != 2 or call.keywords
                or any(isinstance(a, ast.Starred) for a in call.args)):
            return None
        owner = self.names.qualified(f, call.args[0])
        if owner is None or not self.names.in_run(owner, f.path):
            return None
        out: list = []
        for value in self.values.values(f, call.args[1], depth + 1, env=env):
            if value is UNKNOWN or value[0] in ("def", "annotated") or not isinstance(value[1], ast.Constant) \
                    or not isinstance(value[1].value, str):
                out.append(None)
                continue
            out.append(self.names.lookup_def(f"{owner}.{value[1].value}", f.path))
        return out

    def self_classes(self, f: PyFile, node: ast.AST) -> list[tuple[PyFile, Def]] | None:
        """``self`` in a method (its first parameter, never rebound): an instance of the method's
        class or of one of its subclasses in the run, which are followed transitively. None when
        ``node`` is not such a name."""
        if self.classes is None or not isinstance(node, ast.Name):
            return None
        found = f.scope_at(node).lookup(node.id)
        if found is None:
            return None
        _, binding = found
        if binding.param_of is None or binding.values or binding.loops or binding.imports or binding.defs:
            return None
        d = f.def_by_qualname.get(binding.param_of)
        cls = f.def_by_qualname.get(d.parent) if d is not None and d.parent else None
        if d is None or cls is None or d.kind != "function" or cls.kind != "class":
            return None
        args = d.node.args
        first = [*args.posonlyargs, *args.args][:1]
        if not first or first[0].arg != node.id or any(
                self.names.qualified(f, dec) in ("builtins.staticmethod", "builtins.classmethod") for dec in d.node.decorator_list):
            return None
        out = [(f, cls)]
        seen = {(f.path, cls.qualname)}
        todo = [(f.path, cls.qualname)]
        while todo:
            for sub in sorted(self.classes.subclasses(*todo.pop())):
                if sub in seen:
                    continue
                seen.add(sub)
                todo.append(sub)
                sf = self.names.files.file(sub[0])
                sd = sf.def_by_qualname.get(sub[1]) if sf is not None else None
                if sd is not None:
                    out.append((sf, sd))
        return out

    def call_env(self, cf: PyFile, call: ast.Call, f: PyFile, d: Def) -> "Env | None":
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
            if origin is UNKNOWN:
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
