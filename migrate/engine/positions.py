"""Positions of a module's nodes, as libcst's ``PositionProvider`` gives them, at a lower cost.

libcst computes positions by rendering the module with a code generator that notes where each node
starts and ends. Most of that cost is Python overhead around the rendering: a regular-expression
split of every token to count its lines, and a generator-based context manager for every node with
a syntactic position. This generator does the same rendering with a plain test for line breaks and
a class-based context manager, and gives the same map (``tests/test_fast_path.py`` compares them).
The engine asks for positions only for files where a rule reported.
"""

from __future__ import annotations

from libcst import CSTNode, Module
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
        if "\n" in value or "\r" in value:
            segments = NEWLINE_RE.split(value)
            self.line += len(segments) - 1
            self.column = len(segments[-1])
        else:
            self.column += len(value)

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


def positions(module: Module) -> dict[CSTNode, CodeRange]:
    """Each node of ``module`` -> its ``CodeRange``: what ``MetadataWrapper.resolve(PositionProvider)``
    gives for the same module."""
    sink = _Computed()
    state = _State(default_indent=module.default_indent, default_newline=module.default_newline, provider=sink)
    module._codegen(state)
    return sink._computed
