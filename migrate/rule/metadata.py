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

from libcst import CSTNode, Module, visit_batched
from libcst._position import CodePosition, CodeRange
from libcst.metadata.position_provider import NEWLINE_RE, PositionProvidingCodegenState


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
    visit_batched(module, [], before_visit=enter, after_leave=leave)
    return parents
