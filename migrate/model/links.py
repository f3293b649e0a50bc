"""What joins sites across files: the object each writer saves, the readers of a path a writer may
write, and the values made at one site that become part of another (parts built into an exported
model, TorchScript class instances passed to scripted functions)."""

from __future__ import annotations

import ast
from dataclasses import dataclass, field

from ts2export.model import pathpattern as ap
from ts2export.model.calls import Calls
from ts2export.model.classes import Classes
from ts2export.model.names import Names
from ts2export.model.origins import Origins
from ts2export.model.pyfile import Def, first_arg, returns_of
from ts2export.model.sites import ENTRY_DECORATOR, ENTRY_SCRIPT, ENTRY_TRACE, READER, WRITER, Site, Sites
from ts2export.model.torchapi import JIT_SAVE
from ts2export.model.values import UNKNOWN, Values


@dataclass(eq=False)
class Links:
    sites: Sites
    names: Names
    values: Values
    origins: Origins
    calls: Calls
    classes: Classes
    _links_by_value: list[tuple[Site, Site]] | None = field(default=None, init=False)  # see value_links
    _stored: dict[str, list[Site]] | None = field(default=None, init=False)  # see stored_as

    def __post_init__(self) -> None:
        self._link()

    def _link(self) -> None:
        """Writers to the objects they save; readers to writers of a path that may match."""
        self.writer_origins: dict[int, list] = {}
        self.receivers: dict[int, ast.AST | None] = {}  # writer -> what it saves
        for s in self.sites.all:
            if s.kind != WRITER:
                continue
            receiver = first_arg(s.node, "m") if s.api == JIT_SAVE else s.node.func.value
            self.receivers[id(s)] = receiver
            self.writer_origins[id(s)] = self.origins.origins(s.file, receiver) if receiver is not None else [UNKNOWN]
        writers = [s for s in self.sites.all if s.kind == WRITER]
        self.links: dict[int, list[Site]] = {}
        for r in (s for s in self.sites.all if s.kind == READER):
            for w in writers:
                if any(ap.may_match(p, q) for p in r.patterns for q in w.patterns):
                    self.links.setdefault(id(r), []).append(w)
                    self.links.setdefault(id(w), []).append(r)

    def embedded_sites(self, site: Site) -> list[Site]:
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
            for value in self.values.values(vf, node, depth):
                if value is UNKNOWN or value[0] in ("def", "annotated"):
                    continue
                wf, expr = value
                if not isinstance(expr, ast.Call):
                    continue
                spans.append((wf.path, wf.start(expr), wf.end(expr)))
                name = self.names.qualified(wf, expr.func)
                found = self.names.lookup_def(name, wf.path) if name else None
                if found is None:
                    continue
                scopes.add((found[0].path, found[1].qualname))
                if found[1].kind == "function":
                    for r in returns_of(found[1].node):
                        if r.value is not None:
                            todo.append((found[0], r.value, depth + 1))
        out = []
        for s in self.sites.all:
            if s is site or s.kind not in (ENTRY_SCRIPT, ENTRY_TRACE, READER):
                continue
            inside = any(p == s.file.path and a <= s.start and s.end <= b for p, a, b in spans)
            within = any(p == s.file.path and (s.scope == q or s.scope.startswith(q + ".")) for p, q in scopes)
            if inside or within:
                out.append(s)
        return out

    def value_links(self) -> list[tuple[Site, Site]]:
        """Pairs of sites joined because a value made at one becomes part of the other (see
        :meth:`embedded_sites` and :meth:`_instance_flows`). The sources never change: found once,
        though units are formed again when the findings are attached."""
        if self._links_by_value is None:
            pairs = self._instance_flows()
            for s in self.sites.all:
                if s.kind in (ENTRY_SCRIPT, ENTRY_TRACE):
                    pairs.extend((s, inner) for inner in self.embedded_sites(s))
            self._links_by_value = pairs
        return self._links_by_value

    def _instance_flows(self) -> list[tuple[Site, Site]]:
        """A TorchScript class (`@torch.jit.script class C`) whose instances are passed to a scripted
        function (`apply(C(), x)`, `c = C(); apply(c, x)`) goes with it: a scripted function that
        stays takes only TorchScript values, so the class cannot lose its decorator alone."""
        classes: dict[tuple[str, str], Site] = {}
        functions: list[tuple[Site, Def]] = []
        for s in self.sites.all:
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
            for f, call in self.calls.calls_of(site.file.path, d.qualname):
                for arg in [*call.args, *(k.value for k in call.keywords)]:
                    made = None
                    if isinstance(arg, ast.Call):
                        made = self.names.def_of(f, arg.func)
                    elif isinstance(arg, ast.Name):
                        made = self.calls.assigned_class(f, arg)
                    if made is not None and (made[0].path, made[1].qualname) in classes:
                        pairs.append((site, classes[(made[0].path, made[1].qualname)]))
        return pairs

    def stored_as(self, f, node: ast.AST | None, origins: list) -> list[Site]:
        """Entry points and loads whose value is stored as an attribute of the name that ``node``
        (``model.proj``, in ``f``) reads, when ``origins`` cannot say where it comes from:
        `self.proj = torch.jit.script(...)` in a class, read from outside through an instance
        that the model does not follow. What reads it there (a freeze, a save) must get the kind
        that the site makes (issue 32)."""
        if not isinstance(node, ast.Attribute) or UNKNOWN not in origins:
            return []
        if self._stored is None:
            self._stored = {}
            for site in self.sites.all:
                if site.kind not in (ENTRY_SCRIPT, ENTRY_TRACE, READER):
                    continue
                for target in _assigned_to(site):
                    if isinstance(target, ast.Attribute):
                        self._stored.setdefault(target.attr, []).append(site)
        return list(self._stored.get(node.attr, ()))

    def is_writer(self, s: Site) -> bool:
        """A `.save(...)` call is a TorchScript writer when a rule reported it or what it saves
        comes from TorchScript."""
        if s.kind != WRITER:
            return False
        if s.api == JIT_SAVE or s.findings:
            return True
        if self.stored_as(s.file, self.receivers.get(id(s)), self.writer_origins.get(id(s), [])):
            return True
        for o in self.writer_origins.get(id(s), ()):
            if isinstance(o, Site):
                return True
            if isinstance(o, tuple) and o[0] == "instance" and self.classes.script_module_roots(o[1], o[2]):
                return True
        return False

    def artifacts(self) -> list[tuple[str, list[Site]]]:
        """Each artifact path pattern with the writers and readers linked through it."""
        groups: dict[str, list[Site]] = {}
        writers = {id(s) for s in self.sites.all if self.is_writer(s)}
        for s in self.sites.all:
            if s.kind == READER or id(s) in writers:
                for p in s.patterns:
                    groups.setdefault(ap.shown(p), []).append(s)
        return sorted((k, sorted(v, key=lambda s: (s.file.path, s.start))) for k, v in groups.items())


def _assigned_to(site: Site) -> list[ast.AST]:
    """The targets of the assignment whose value is the site's call (or ``call.eval()``)."""
    out: list[ast.AST] = []
    for node in ast.walk(site.file.tree) if site.scope == "" else _scope_nodes(site):
        if isinstance(node, ast.Assign):
            value = node.value
            if isinstance(value, ast.Call) and isinstance(value.func, ast.Attribute) and value.func.attr == "eval":
                value = value.func.value
            if value is site.node:
                out.extend(node.targets)
    return out


def _scope_nodes(site: Site):
    d = site.file.innermost_def(site.start)
    return ast.walk(d.node) if d is not None else ast.walk(site.file.tree)
