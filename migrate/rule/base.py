"""The two kinds of rules: :class:`Rule` (a libcst visitor over a Python module, with metadata
computed when first asked for and qualified names) and :class:`TextRule` (line-oriented, report
only, over other sources)."""

from __future__ import annotations

import contextlib
import re
from dataclasses import replace
from typing import Callable, ClassVar, Iterable, Iterator, Sequence

import libcst as cst
from libcst.metadata import (
    CodeRange,
    ParentNodeProvider,
    PositionProvider,
    ScopeProvider,
)

from ts2export.edits import Applicability, Edit, Fix, Import, Replacement
from ts2export.quoting import inline_node
from ts2export.rule.context import RuleContext
from ts2export.rule.metadata import all_parents, positions
from ts2export.rule.examples import Invalid, Valid
from ts2export.rule.findings import Alternative, TextFinding

_NO_DEFAULT = object()  # get_metadata without a default raises for a node the provider did not see

# Qualified-name prefixes that mean "TorchScript". The catch-all rule and the pre-filter use them.
TORCHSCRIPT_PREFIXES: tuple[str, ...] = (
    "torch.jit",
    "torch.classes",
    "torch._C._jit",
    "torch._C.ScriptModule",
    "torch._C.ScriptFunction",
    "torch._C.CompilationUnit",
    "torch.utils.mobile_optimizer",
)


def _resolve_at_the_bottom(wrapper: cst.MetadataWrapper, key):
    """``wrapper.resolve(key)``, run on a thread of its own (see :func:`_at_the_bottom`)."""
    return _at_the_bottom(lambda: wrapper.resolve(key))


def _at_the_bottom(compute: Callable[[], object]):
    """``compute()``, run on a thread of its own. Asked for from deep inside a visit, a
    provider's walk of the tree would run on top of the visit's frames, and CPython 3.11 maps and
    unmaps a chunk of its frame stack each time the walk's recursion crosses a chunk's end: about
    a million system calls over torch/nn, a sixth of the run. A thread's frame stack starts empty."""
    import threading

    out: list = []

    def run() -> None:
        try:
            out.append((True, compute()))
        except BaseException as exc:  # noqa: BLE001 - re-raised on the caller's thread
            out.append((False, exc))

    thread = threading.Thread(target=run, name="ts2export-metadata", daemon=True)
    thread.start()
    thread.join()
    ok, value = out[0]
    if not ok:
        raise value
    return value


def _import_statement_nodes(module: cst.Module) -> set[int]:
    """The ``id``s of every node of the module's import statements outside functions and classes
    (the others bind names the import table leaves to scope analysis): a walk of the statements,
    not of the expressions in them."""
    found: set[int] = set()

    class _Nodes(cst.CSTVisitor):
        def on_visit(self, node: cst.CSTNode) -> bool:
            found.add(id(node))
            return True

    class _Statements(cst.CSTVisitor):
        def on_visit(self, node: cst.CSTNode) -> bool:
            if isinstance(node, (cst.Import, cst.ImportFrom)):
                node.visit(_Nodes())
                return False
            return not isinstance(node, (cst.FunctionDef, cst.ClassDef, cst.BaseExpression))

    module.visit(_Statements())
    return found


def defs_from(start: cst.CSTNode | None, parent: Callable[[cst.CSTNode], cst.CSTNode | None]) -> tuple[str, ...]:
    """Qualified names of the classes and functions from ``start`` (included) outwards, innermost
    first (``("Gate.forward", "Gate")``), as :mod:`ts2export.model.pyfile` names them."""
    names: list[str] = []
    current = start
    while current is not None:
        if isinstance(current, (cst.FunctionDef, cst.ClassDef)):
            names.append(current.name.value)
        current = parent(current)
    names.reverse()
    return tuple(".".join(names[:i]) for i in range(len(names), 0, -1))


class _Screen:
    """What :meth:`Rule.may_be_named` needs of the names a rule asks about, worked out once per
    tuple of names (the rules ask with the same few tuples about every call of a file)."""

    __slots__ = ("names", "own_scope", "builtin", "by_last", "dotless", "roots")

    def __init__(self, names: Sequence[str]) -> None:
        self.names = frozenset(names)
        self.own_scope = any(n.startswith("<") for n in names)
        self.builtin = any(n.startswith("builtins.") for n in names)
        self.by_last: dict[str, tuple[str, ...]] = {}  # a name's last part -> the first parts it comes with
        for n in names:
            self.by_last[n.rsplit(".", 1)[-1]] = (*self.by_last.get(n.rsplit(".", 1)[-1], ()), n.split(".", 1)[0])
        self.dotless = any("." not in n for n in names)
        self.roots = frozenset(n.split(".", 1)[0] for n in names)


_SCREENS: dict[tuple[str, ...], _Screen] = {}


def _screen(names: Sequence[str]) -> _Screen:
    key = tuple(names)
    found = _SCREENS.get(key)
    if found is None:
        found = _SCREENS[key] = _Screen(names)
    return found


def _shape(node: cst.CSTNode) -> tuple[str, str, str]:
    """(first part, the rest, last part) of the node's dotted name as libcst spells it (calls and
    subscripts dropped; any other head is spelled ``None``, as libcst does: ``"-".join`` is
    ``None.join``)."""
    parts: list[str] = []
    head: cst.BaseExpression = node
    while isinstance(head, (cst.Attribute, cst.Call, cst.Subscript)):
        if isinstance(head, cst.Attribute):
            parts.append(head.attr.value)
            head = head.value
        else:
            head = head.func if isinstance(head, cst.Call) else head.value
    head_name = head.value if isinstance(head, cst.Name) else "None"
    return head_name, ".".join(reversed(parts)), parts[0] if parts else head_name


class _RuleMeta:
    """Shared metadata and documentation helpers of both rule kinds."""

    #: Stable id, e.g. ``TSX101`` (see docs/rules.md for the scheme).
    id: ClassVar[str] = ""
    #: One-line summary in the imperative or descriptive voice.
    summary: ClassVar[str] = ""
    #: Applicability of this rule's fixes (``NONE`` for report-only rules).
    applicability: ClassVar[Applicability] = Applicability.NONE
    #: File kinds the rule checks: "python" or "cpp".
    file_kinds: ClassVar[tuple[str, ...]] = ("python",)
    #: Substrings one of which a file must contain for the rule to possibly match (pre-filter).
    triggers: ClassVar[tuple[str, ...]] = ("jit",)
    #: Further groups of substrings: the file must also contain one of each group (a rule whose
    #: findings are only ever inside ``forward`` needs ``"forward"`` besides ``"Module"``, say).
    also_requires: ClassVar[tuple[tuple[str, ...], ...]] = ()
    #: A fallback rule's findings are dropped where another rule reports the same place.
    fallback: ClassVar[bool] = False
    #: The fix leaves code that ``torch.jit.script`` still compiles compiling, with the same
    #: behaviour (proven by a test). Otherwise the engine holds the fix back inside code that an
    #: entry point which stays TorchScript still compiles.
    keeps_torchscript: ClassVar[bool] = False
    #: Likewise for code that ``torch.jit.trace`` still traces (the traced graph is the same).
    keeps_tracing: ClassVar[bool] = False
    #: The construct, left as it is, makes ``torch.export`` fail (or compute something else): an
    #: entry point that exports code holding it waits until it is fixed.
    blocks_export: ClassVar[bool] = False
    #: A trace records one path through the construct (the branch its example took): the fix keeps
    #: every path, so a program exported from a trace that reaches it would compute something else
    #: than the trace for other inputs. A trace that reaches the construct stays, with that reason.
    trace_takes_one_path: ClassVar[bool] = False
    #: The fix makes parameters leaves again (a value written into them in place with grad mode on
    #: made them non-leaf, which ``ExportedProgram.module()`` refuses): a recording's proof that
    #: exported such a module proves the migration only where a fix of this kind is written.
    makes_parameters_leaves: ClassVar[bool] = False
    #: What ``torch.export`` raises on the construct as it is (substrings of the error), which its
    #: fix takes away: a recording's proof exports the code as it was, so a proof that failed with
    #: one of these at a line the fix rewrites says nothing of the migrated code, and does not hold
    #: its entry point back (the static decision stands).
    proof_failures: ClassVar[tuple[str, ...]] = ()
    #: The fix turns the condition it reports (a call with no arguments, alone or under `not`, as
    #: an `if`'s test) into one that is True under ``torch.export`` and False in eager Python, as
    #: the old call was under TorchScript: the branch that runs only in eager Python is not traced
    #: by the export once the fix is written, so what export would stop at there does not hold
    #: an export back (nor what only that branch calls).
    export_skips_eager_branch: ClassVar[bool] = False
    #: The rule reports the sites the program model groups into migration units (entry points,
    #: saves, loads, passes over a module). A fix of one that other fixes of the same run made
    #: possible waits for the next run, which decides its unit with it.
    unit_site: ClassVar[bool] = False
    VALID: ClassVar[Sequence[Valid]] = ()
    INVALID: ClassVar[Sequence[Invalid]] = ()

    @classmethod
    def name(cls) -> str:
        """Kebab-case name derived from the class name (``RemoveJitAnnotate`` -> ``remove-jit-annotate``)."""
        return re.sub(r"(?<!^)(?=[A-Z])", "-", cls.__name__).lower()

    @classmethod
    def doc_sections(cls) -> dict[str, str]:
        """The docstring split into its sections (What it does / Why / Example / Fix safety)."""
        import inspect

        text = inspect.cleandoc(cls.__doc__ or "")
        sections: dict[str, str] = {}
        current = "summary"
        buf: list[str] = []
        for line in text.splitlines():
            m = re.fullmatch(r"#+\s*(.+?)\s*", line)
            if m:
                sections[current] = "\n".join(buf).strip()
                current, buf = m.group(1).lower(), []
            else:
                buf.append(line)
        sections[current] = "\n".join(buf).strip()
        return sections


class Rule(_RuleMeta, cst.BatchableCSTVisitor):
    """Base class of Python rules: a batchable libcst visitor with metadata."""

    METADATA_DEPENDENCIES = (
        PositionProvider,
        ParentNodeProvider,
        ScopeProvider,
    )

    #: Per rule class, the names of its visitor methods (see :meth:`get_visitors`).
    _visitor_names: ClassVar[dict[type, tuple[str, ...]]] = {}

    def __init__(self, context: RuleContext) -> None:
        super().__init__()
        self.context = context
        self.findings: list[tuple[cst.CSTNode, str, Fix | None, Applicability]] = []
        #: id(node) of a finding -> the definition it is about, where it lies outside it (see report)
        self.about: dict[int, cst.CSTNode] = {}
        self._wrapper: cst.MetadataWrapper | None = None

    def get_visitors(self):  # type: ignore[override]
        """libcst's answer (the ``visit_*``/``leave_*`` methods a visitor defines), found once per
        rule class: libcst looks through every attribute of the visitor (some 3,000 no-op stubs)
        for each instance, that is for each rule and each file (8% of a model zoo's scan)."""
        names = Rule._visitor_names.get(type(self))
        if names is None:
            names = Rule._visitor_names[type(self)] = tuple(super().get_visitors())
        return {name: getattr(self, name) for name in names}

    # -- metadata, computed when first asked for ----------------------------------------------
    @contextlib.contextmanager
    def resolve(self, wrapper: cst.MetadataWrapper) -> Iterator[None]:
        """Unlike libcst's visitors, resolve no metadata before the visit: a provider is run (once
        per module, shared by the rules through ``wrapper``) when a rule first asks for it. Most
        files a rule visits give it nothing to ask about, and each provider is a full walk of the
        tree in Python (see docs/speed.md)."""
        self._wrapper, self.metadata = wrapper, {}
        if self.context.full_metadata:
            self.metadata = wrapper.resolve_many(self.get_inherited_dependencies())
        try:
            yield
        finally:
            self._wrapper, self.metadata = None, {}

    def get_metadata(self, key, node, default=_NO_DEFAULT):  # type: ignore[override]
        if key not in self.metadata and self._wrapper is not None and key in self.get_inherited_dependencies():
            self.metadata[key] = _resolve_at_the_bottom(self._wrapper, key)
        if default is _NO_DEFAULT:
            return super().get_metadata(key, node)
        return super().get_metadata(key, node, default)

    # -- reporting --------------------------------------------------------------------------
    def report(
        self,
        node: cst.CSTNode,
        message: str,
        *,
        replacement: Replacement | None = None,
        edits: Iterable[Edit] | None = None,
        imports: Iterable[Import] = (),
        applicability: Applicability | None = None,
        alternative: Alternative | None = None,
        about: cst.CSTNode | None = None,
    ) -> None:
        """Report ``node``. Give ``replacement`` (for ``node`` itself) or ``edits`` to offer a fix;
        ``alternative``: a second fix the program model may take instead (same applicability);
        ``about``: the class or function of this file the finding is about where ``node`` lies
        outside it (``X = torch.jit.script(X)`` after ``class X``): the program model holds the fix
        while a kept TorchScript call compiles that definition."""
        if about is not None:
            self.about[id(node)] = about
        appl = applicability or self.applicability
        all_edits: list[Edit] = list(edits or ())
        if replacement is not None:
            all_edits.insert(0, Edit(node, replacement))
        imports, withdrawn = self._imports_beside_reexports(tuple(imports))
        if withdrawn and all_edits:
            message, all_edits, alternative = f"{message} (not rewritten: {withdrawn})", [], None
        if alternative is not None:
            alt_imports, alt_withdrawn = self._imports_beside_reexports(tuple(alternative.imports))
            alternative = None if alt_withdrawn else replace(alternative, imports=alt_imports)
        fix = Fix(tuple(all_edits), imports, appl) if all_edits else None
        second = None
        if fix is None:
            appl = Applicability.NONE
        elif alternative is not None and alternative.edits:
            second = (Fix(tuple(alternative.edits), tuple(alternative.imports), appl), alternative.message)
        self.findings.append((node, message, fix, appl, second))

    def _imports_beside_reexports(self, imports: tuple[Import, ...]) -> tuple[tuple[Import, ...], str | None]:
        """The imports a fix needs, in a file that takes a library through a module of the run
        (``from ..compat import torch``, where compat.py may bind ``torch = None`` so that the
        package imports without it): ``import torch`` is dropped, the file's ``torch`` is it; an
        import from that library would make the file need it, so the fix is withdrawn (why)."""
        through = self.context.libraries_through_the_run
        if not imports or not through:
            return imports, None
        kept: list[Import] = []
        for imp in imports:
            head = imp.module.split(".", 1)[0]
            if head not in through:
                kept.append(imp)
            elif imp.name is not None or imp.asname is not None or imp.module != head:
                spelled = f"from {imp.module} import {imp.name}" if imp.name else f"import {imp.module}"
                return imports, (f"this file takes `{head}` from a module of its package, which lets it import "
                                 f"without {head}; the fix needs `{spelled}`, which would not")
        return tuple(kept), None

    # -- helpers over metadata --------------------------------------------------------------
    def qualnames(self, node: cst.CSTNode) -> set[str]:
        if isinstance(node, cst.Call):
            # libcst names a call after the function it calls; but the value of `f(a)` is not `f`, and
            # matching it would report `torch.jit.trace(m, x)(y)` twice (once per call) at one place.
            return set()
        found = self._imported_qualnames(node)
        if found is None:
            # What libcst's QualifiedNameProvider gives, without its walk of the whole tree: it stores,
            # for each node with a scope, a lazy call of the scope's get_qualified_names_for.
            try:
                scope = self.get_metadata(ScopeProvider, node, None)
            except KeyError:  # pragma: no cover - node created by a rule
                return set()
            found = {q.name for q in scope.get_qualified_names_for(node)} if scope is not None else set()
        view = self.context.program
        # a library's name imported through a module of the run (`from ..compat import torch`)
        return {view.library_name(q) for q in found} if view.reexports else found

    def _imported_qualnames(self, node: cst.CSTNode) -> set[str] | None:
        """libcst's qualified names of a name the file imports at module level and binds nowhere
        else, read from its import statements without scope analysis; None where the answer may
        differ from libcst's, or on the full path (see :mod:`ts2export.rule.imported`)."""
        ctx = self.context
        if ctx.full_metadata or self._wrapper is None or isinstance(node, (cst.Call, cst.BaseString)):
            return None  # (libcst reads names in string annotations: scope analysis answers)
        from libcst.helpers import get_full_name_for_node

        if not isinstance(node, (cst.Name, cst.Attribute, cst.Subscript)):
            # libcst names no other expression (`int | None`, `a + b`); a definition after its name
            return set() if get_full_name_for_node(node) is None else None
        table = ctx.import_table
        if table is None:
            return None
        if ctx.import_nodes is None:
            ctx.import_nodes = _import_statement_nodes(self._wrapper.module)
        if id(node) in ctx.import_nodes:
            # libcst's scope analysis gives the names in an import statement no scope: it names
            # them nothing (the statement and its aliases have one)
            return set() if isinstance(node, (cst.Name, cst.Attribute)) else None
        bare = isinstance(node, cst.Name)
        return table.qualnames(get_full_name_for_node(node), bare, lambda: self._in_a_body(node),
                               lambda: self._statement_index(node))

    def _statement_index(self, node: cst.CSTNode) -> int | None:
        """The index in ``ast``'s body of the module of the statement ``node`` is in (a line of
        ``a; b`` is two of ``ast``'s statements), None where unknown."""
        ctx, known = self.context, self.context.parents
        if known is None or self._wrapper is None or node not in known:
            return None
        module = self._wrapper.module
        top, parent = node, known[node]
        while parent is not None and parent is not module:
            top, parent = parent, known.get(parent)
        if parent is not module:
            return None
        if ctx.statement_indexes is None:
            ctx.statement_indexes, index = {}, 0
            for stmt in module.body:
                ctx.statement_indexes[id(stmt)] = index
                index += len(stmt.body) if isinstance(stmt, cst.SimpleStatementLine) else 1
        return ctx.statement_indexes.get(id(top))

    def _in_a_body(self, node: cst.CSTNode) -> bool:
        """``node`` is in a function's or a class's body (its scope is not the module's), as the
        visit's record of parents shows (completed where the visit has not reached it yet)."""
        known = self.context.parents
        if known is None:
            return False
        current = known.get(node, _NO_DEFAULT)
        if current is _NO_DEFAULT and self.parent(node) is not None:  # completes the map (a third of scope analysis)
            current = known.get(node, _NO_DEFAULT)
        if current is _NO_DEFAULT:
            return False
        while current is not None:
            if isinstance(current, cst.IndentedBlock) and isinstance(known.get(current), (cst.FunctionDef, cst.ClassDef)):
                return True
            current = known.get(current)
        return False

    def matches(self, node: cst.CSTNode, *names: str) -> str | None:
        """The qualified name of ``node`` if it is one of ``names``, else None."""
        if not self.may_be_named(node, names):
            return None
        found = self.qualnames(node)
        for name in names:
            if name in found:
                return name
        return None

    def may_be_named(self, node: cst.CSTNode, names: Sequence[str], prefix: bool = False) -> bool:
        """False when no qualified name of ``node`` can be one of ``names`` (or, with ``prefix``,
        start with one), decided without libcst's scope analysis. libcst names ``a.b.c`` after what ``a``
        is: an import (``torch.jit.script``, anything an import's alias stands for), a builtin
        (``builtins.a``), or a local (``a.b.c`` or ``<scope>.a.b.c``, where ``<scope>`` starts with
        a function or class of the file). So the name is what an import binding ``a`` stands for
        followed by ``.b.c``, or ends with the node's last part and starts with ``a``, ``builtins``
        or a function or class name.
        Asking only when that allows a match keeps scope analysis off most files, and keeps
        libcst's search of a name's assignments (quadratic in a file that assigns one name many
        times) off names no rule asks about (see docs/speed.md)."""
        ctx = self.context
        if ctx.full_metadata or not isinstance(node, (cst.Name, cst.Attribute, cst.Subscript)):
            return True
        screen = _screen(names)
        if screen.own_scope:  # libcst's own scopes (`<locals>.x`, `<comprehension>.x`)
            return True
        facts = ctx.bound_names
        if facts is None:
            return True
        imported, defined, assigned = facts
        shape = ctx.name_shapes.get(id(node))
        if shape is None or shape[0] is not node:
            shape = ctx.name_shapes[id(node)] = (node, *_shape(node))
        _, head_name, tail, last = shape
        if head_name in imported:
            # an import's name, with the node's attributes after it (a name alone may be named
            # after the whole dotted import); or a local of the same name (below)
            for base in imported[head_name]:
                base = ctx.program.library_name(base)
                q = f"{base}.{tail}" if tail else base
                if any(q.startswith(n) for n in names) if prefix else q in screen.names:
                    return True
        local = head_name in assigned or head_name not in imported  # `torch = None` makes `torch.jit` local

        def root_ok(root: str) -> bool:
            return root == "builtins" or root in defined or (local and root == head_name)

        if prefix:  # a prefix without a dot may be the start of any first part
            return screen.dotless or any(root_ok(r) for r in screen.roots)
        if screen.builtin:
            return True
        return any(root_ok(r) for r in screen.by_last.get(last, ()))

    def matches_prefix(self, node: cst.CSTNode, *prefixes: str) -> str | None:
        if not self.may_be_named(node, prefixes, prefix=True):
            return None
        for q in sorted(self.qualnames(node)):
            for p in prefixes:
                if q == p or q.startswith(p + "."):
                    return q
        return None

    def parent(self, node: cst.CSTNode) -> cst.CSTNode | None:
        # The engine's visit records each node's parent as it enters it: libcst's parent provider
        # is a second full walk of the tree (three times the cost of the visit itself), asked by
        # most files with findings. A node the visit has not reached yet is asked of the provider.
        # A node the visit has not reached yet completes the map with a walk of the tree (a third
        # of the provider's cost).
        ctx = self.context
        known = ctx.parents
        if known is not None and self._wrapper is not None:
            found = known.get(node, _NO_DEFAULT)
            if found is not _NO_DEFAULT:
                return found
            if not ctx.parents_complete:
                module = self._wrapper.module
                _at_the_bottom(lambda: all_parents(module, known))
                ctx.parents_complete = True
                return known.get(node)
            return None  # not a node of the module (one a rule made): the provider has none either
        return self.get_metadata(ParentNodeProvider, node, None)

    def position(self, node: cst.CSTNode) -> CodeRange:
        ctx = self.context
        if not ctx.full_metadata and self._wrapper is not None:
            if ctx.positions is None:  # libcst's positions, at half the cost (ts2export.rule.metadata)
                module = self._wrapper.module
                ctx.positions = _at_the_bottom(lambda: positions(module))
            found = ctx.positions.get(node)
            if found is not None:
                return found
        return self.get_metadata(PositionProvider, node)

    def in_source_order(self, items: Iterable, node_of: Callable | None = None) -> list:
        """``items`` sorted by where they start: nodes, or anything ``node_of`` gives a node of
        (libcst's accesses and assignments: ``lambda a: a.node``; those without a node, builtins,
        come first). libcst keeps a name's assignments and references in sets, whose order changes
        from run to run: anything that reports or edits from them goes through this, so that a
        run's findings never depend on it."""
        def key(item) -> tuple[int, int]:
            node = node_of(item) if node_of is not None else item
            if not isinstance(node, cst.CSTNode):
                return (0, -1)
            start = self.position(node).start
            return (start.line, start.column)

        return sorted(items, key=key)

    def in_import(self, node: cst.CSTNode) -> bool:
        """Whether ``node`` is part of an import statement (a name there is not a use)."""
        current = self.parent(node)
        while current is not None and not isinstance(current, cst.BaseStatement):
            if isinstance(current, (cst.Import, cst.ImportFrom)):
                return True
            current = self.parent(current)
        return False

    def enclosing_defs(self, node: cst.CSTNode) -> tuple[str, ...]:
        """Qualified names of the classes and functions around ``node``, innermost first
        (``("Gate.forward", "Gate")``), as the program model names them."""
        return defs_from(self.parent(node), self.parent)

    def object_kind(self, node: cst.BaseExpression) -> str:
        """What the program model found ``node`` (the object given to a ``torch.jit.script`` or
        ``trace`` call) to be: "module", "function", "class" or "unknown"."""
        defs = self.enclosing_defs(node)
        return self.context.program.object_kind(defs[0] if defs else "", self.code_of(node))

    def line_comment(self, node: cst.CSTNode) -> str:
        """The source line(s) a node starts on, for hint comments."""
        pos = self.position(node)
        lines = self.context.lines
        return lines[pos.start.line - 1] if 0 < pos.start.line <= len(lines) else ""

    def substitute(self, node: cst.BaseExpression, value: cst.BaseExpression) -> cst.BaseExpression:
        """``value`` made fit to stand where ``node`` stands (parenthesised where precedence needs it)."""
        atomic = (cst.Name, cst.Attribute, cst.Call, cst.Subscript, cst.List, cst.Dict, cst.Tuple, cst.Set,
                  cst.ListComp, cst.DictComp, cst.SetComp, cst.GeneratorExp, cst.BaseNumber, cst.BaseString,
                  cst.Ellipsis)
        if value.lpar or isinstance(value, atomic):
            return value
        parent = self.parent(node)
        free = (cst.Assign, cst.AnnAssign, cst.AugAssign, cst.Return, cst.Arg, cst.Expr, cst.Element,
                cst.DictElement, cst.Index, cst.Yield)
        if isinstance(parent, free):
            return value
        return value.with_changes(lpar=[cst.LeftParen()], rpar=[cst.RightParen()])

    @staticmethod
    def code_of(node: cst.CSTNode) -> str:
        return cst.Module(body=[]).code_for_node(node)

    @staticmethod
    def shown(node: cst.CSTNode) -> str:
        """A node's code as a message or comment quotes it: one line, no comments, short."""
        return inline_node(node)

    @staticmethod
    def parse_expr(code: str) -> cst.BaseExpression:
        return cst.parse_expression(code)


class TextRule(_RuleMeta):
    """Base class of line-oriented, report-only rules over non-Python sources (C++)."""

    file_kinds: ClassVar[tuple[str, ...]] = ("cpp",)

    def __init__(self, context: RuleContext) -> None:
        self.context = context

    def check(self, text: str) -> Iterator[TextFinding]:  # pragma: no cover - abstract
        raise NotImplementedError
