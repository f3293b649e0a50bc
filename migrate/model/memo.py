"""Memory and bounds for the program model's recursive questions, so that their cost grows with
the code and not with the number of paths through it.

The model follows values through names, parameters, returns and attributes. Followed naively, a
helper called from twenty places whose callers are each called from twenty places is asked about
20**depth times (a public model zoo did not finish in 30 minutes). Most questions depend only on
what they are asked (a node and a depth): :class:`PathMemo` remembers those. Some cut cycles with
the set of nodes already on the path (``seen``): their answer depends on the path, but only
through the nodes of ``seen`` they looked at. :class:`PathMemo` records, for each answer, the
nodes its computation looked up, and reuses the answer for another path exactly when that path
meets those nodes as the first did. Every answer is the one the plain recursion gives.
"""

from __future__ import annotations

from typing import Callable, Hashable, TypeVar

T = TypeVar("T")

#: How many steps a question follows names, values, calls and definitions before it answers
#: "cannot be followed": a bound on each path, the memory above bounds the paths' number.
MAX_DEPTH = 8


class PathMemo:
    """Answers of one recursive question, keyed on what it is asked, valid for the paths that meet
    the nodes each answer looked up as the path it was computed on did.

    ``ask(key, node_id, seen, compute)``: ``node_id`` is the node the question is about (it is cut,
    answering ``cut``, when already in ``seen``); ``key`` holds every other argument the answer
    depends on (the node, a depth, a context). A question asked with an empty ``seen`` starts a new
    path: what it looks up is not charged to the question that asked it."""

    def __init__(self, cut) -> None:
        self.cut = cut
        self._answers: dict[Hashable, list[tuple[frozenset, frozenset, object]]] = {}
        self._frames: list[set] = []  # the nodes looked up by each question being computed

    def ask(self, key: Hashable, node_id: int, seen: frozenset, compute: Callable[[], T]) -> T:
        charged = bool(seen) and bool(self._frames)
        if charged:
            self._frames[-1].add(node_id)
        if node_id in seen:
            return self.cut
        for looked, met, answer in self._answers.get(key, ()):
            if met == frozenset(n for n in seen if n in looked):
                if charged:
                    self._frames[-1].update(looked)
                return answer  # type: ignore[return-value]
        self._frames.append(set())
        try:
            answer = compute()
        finally:
            looked = frozenset(self._frames.pop())
        self._answers.setdefault(key, []).append((looked, frozenset(n for n in seen if n in looked), answer))
        if charged:
            self._frames[-1].update(looked)
        return answer
