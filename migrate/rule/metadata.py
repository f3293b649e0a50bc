"""Two of libcst's metadata at a lower cost: positions (``PositionProvider``) and parents
(``ParentNodeProvider``), node for node the same maps (``tests/test_fast_path.py`` compares them).

Positions: 
libcst computes positions by rendering the module with a code generator that notes where each node
starts and ends. Most of that cost is Python overhead around the rendering: a regular-expression
split of every token to count its lines, and a generator-based context manager for every node with
a syntactic position. This generator does the same rendering with a plain test for line breaks and
a class-based context manager. The engine asks for positions only for files where a rule reported.

Parents: libcst's provider asks each node for its children (a small visit of each node), on top of
a walk of its own; the engine's batched visit records each node's parent as it enters it
(:func:`parent_recorder`), and a walk with the same hooks (:func:`all_parents`) completes the map
when a rule asks about a node the visit has not reached.
"""

from __future__ import annotations

import contextlib

from libcst import CSTNode, Module
from libcst._nodes.internal import CodegenState
from libcst._position import CodePosition, CodeRange
from libcst.metadata.position_provider import NEWLINE_RE, PositionProvidingCodegenState

from ts2export.rule.walk import walk_batched


class _Computed:
    """Stands for the provider the code generator writes into (its ``_computed`` map)."""

    __slots__ = ("_computed",)

    def __init__(self) -> None:
        self._computed: dict[CSTNode, CodeRange] = {}


class _Syntactic:
    """``PositionProvidingCodegenState.record_syntactic_position``, without a generator."""

    __slots__ = ("state", "node", "start_node", "end_node", "start")

    def __init__(self, state: "_State", node: CSTNode, start_node: CSTNode | None, end_node: CSTNode | None) -> None:
        self.state, self.node, self.start_node, self.end_node = state, node, start_node, end_node

    def __enter__(self) -> None:
        self.start = CodePosition(self.state.line, self.state.column)

    def __exit__(self, *exc) -> None:
        state = self.state
        computed = state.provider._computed
        end = CodePosition(state.line, state.column)
        start = computed[self.start_node].start if self.start_node is not None else self.start
        end = computed[self.end_node].end if self.end_node is not None else end
        computed[self.node] = CodeRange(start, end)


class _State(PositionProvidingCodegenState):
    def add_token(self, value: str) -> None:
        self.tokens.append(value)
        self._update_position(value)

    def _update_position(self, value: str) -> None:
        if "\n" in value or "\r" in value:
            segments = NEWLINE_RE.split(value)
            self.line += len(segments) - 1
            self.column = len(segments[-1])
        else:
            self.column += len(value)

    def record_syntactic_position(self, node: CSTNode, *, start_node: CSTNode | None = None,
                                  end_node: CSTNode | None = None) -> _Syntactic:  # type: ignore[override]
        return _Syntactic(self, node, start_node, end_node)


class Positions(dict):
    """Node -> ``CodeRange``; ``code`` is the module's code, rendered on the way (``module.code``)."""

    code: str = ""


def positions(module: Module) -> Positions:
    """Each node of ``module`` -> its ``CodeRange``: what ``MetadataWrapper.resolve(PositionProvider)``
    gives for the same module, with the code it renders as ``.code``."""
    sink = _Computed()
    sink._computed = Positions()
    state = _State(default_indent=module.default_indent, default_newline=module.default_newline, provider=sink)
    module._codegen(state)
    sink._computed.code = "".join(state.tokens)
    return sink._computed


_NO_POSITION = contextlib.nullcontext()


class _Plain(CodegenState):
    """libcst's plain code generator, noting where each top-level statement's tokens begin."""

    def __init__(self, module: Module, tops: dict[int, int]) -> None:
        super().__init__(default_indent=module.default_indent, default_newline=module.default_newline)
        self.tops = tops
        self.starts: list[int] = [0] * len(tops)

    def before_codegen(self, node: CSTNode) -> None:
        i = self.tops.get(id(node))
        if i is not None:
            self.starts[i] = len(self.tokens)

    def record_syntactic_position(self, node, *, start_node=None, end_node=None):  # type: ignore[override]
        return _NO_POSITION


class StatementPositions:
    """Node -> ``CodeRange`` for the nodes of ``module``, the same ranges :func:`positions` gives,
    each top-level statement's computed when a node in it is first asked for. A file with findings
    has them in a few of its statements: the rest are only rendered (a plain rendering costs about
    a third of one that notes positions), which gives each statement's first line and the module's
    code (``.code``). ``parents``: every node of the module -> its parent (the engine's visit
    records it), which finds a node's statement; a node outside the statements (the module, its
    header) computes the whole map."""

    def __init__(self, module: Module, parents: dict) -> None:
        self.module, self.parents = module, parents
        self._tops = {id(stmt): i for i, stmt in enumerate(module.body)}
        state = _Plain(module, self._tops)
        module._codegen(state)
        tokens = state.tokens
        self.code = "".join(tokens)
        self._lines: list[int] = []  # each statement's first line
        line, done = 1, 0
        for start in state.starts:
            line += len(NEWLINE_RE.findall("".join(tokens[done:start])))
            done = start
            self._lines.append(line)
        self._ranges: dict[CSTNode, CodeRange] = {}
        self._rendered: set[int] = set()
        self._full: Positions | None = None

    def __contains__(self, node: object) -> bool:
        return node in self.parents

    def get(self, node: CSTNode, default=None):
        return self[node] if node in self.parents else default

    def __getitem__(self, node: CSTNode) -> CodeRange:
        found = self._ranges.get(node)
        if found is not None:
            return found
        top, parent = node, self.parents[node]  # KeyError for a node not in the module, as a dict
        while parent is not None and parent is not self.module:
            top, parent = parent, self.parents[parent]
        i = self._tops.get(id(top)) if parent is self.module else None
        if i is None or i in self._rendered:
            if self._full is None:
                self._full = positions(self.module)
            return self._full[node]
        sink = _Computed()
        sink._computed = self._ranges
        state = _State(default_indent=self.module.default_indent, default_newline=self.module.default_newline,
                       provider=sink)
        state.line, state.column = self._lines[i], 0
        top._codegen(state)
        self._rendered.add(i)
        return self._ranges[node]


def parent_recorder(parents: dict):
    """The hooks of a batched visit (``before_visit``, ``after_leave``) that fill ``parents``
    (node -> parent, the module -> None) as it enters each node."""
    stack: list = []
    push, pop = stack.append, stack.pop

    def enter(node: CSTNode) -> None:
        parents[node] = stack[-1] if stack else None
        push(node)

    def leave(node: CSTNode) -> None:
        pop()

    return enter, leave


def all_parents(module: Module, parents: dict) -> dict:
    """``parents`` with every node of ``module`` in it (a walk of the tree, nothing else)."""
    enter, leave = parent_recorder(parents)
    walk_batched(module, [], before_visit=enter, after_leave=leave)
    return parents
