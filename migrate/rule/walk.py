"""A batched visit of a libcst tree that only reads it: the same calls, in the same order, as
``libcst.visit_batched`` with ``CSTVisitor`` semantics, at about half the cost.

libcst visits a node by rebuilding it: each node's ``_visit_and_replace_children`` constructs a
new node (and validates it) from its visited children, which a visitor that changes nothing then
throws away. Over a package of model code that copy is the largest single cost of a cold run (see
docs/speed.md). This walk reads each node's children in the order that method visits them: the
field names it passes to libcst's ``visit_*`` helpers, which are the string constants of its code
(``ImportFrom``: ``whitespace_after_from``, ``relative``, ``module``, ...), read once per class.

Visitors with ``visit_<Node>_<field>`` methods (called around each field) are left to libcst: no
rule has them. ``tests/test_fast_path.py`` checks, over the corpus and real files, that this walk
enters and leaves the same nodes in the same order as libcst's.
"""

from __future__ import annotations

import contextlib
import dataclasses
from typing import Callable, Iterable, Sequence

from libcst import BatchableCSTVisitor, CSTNode, MetadataWrapper, Module, visit_batched

_FIELDS: dict[type, tuple[str, ...]] = {}


def child_fields(cls: type) -> tuple[str, ...]:
    """The fields of ``cls`` its ``_visit_and_replace_children`` visits, in the order it visits them."""
    found = _FIELDS.get(cls)
    if found is None:
        names = {f.name for f in dataclasses.fields(cls)}
        order: list[str] = []
        for const in cls._visit_and_replace_children.__code__.co_consts:
            if isinstance(const, str) and const in names and const not in order:
                order.append(const)
        found = _FIELDS[cls] = tuple(order)
    return found


def walk_batched(module: Module, visitors: Sequence[BatchableCSTVisitor],
                 before_visit: Callable[[CSTNode], None] | None = None,
                 after_leave: Callable[[CSTNode], None] | None = None) -> None:
    """``libcst.visit_batched(module, visitors, before_visit, after_leave)``, reading the tree."""
    methods: dict[str, list] = {}
    for v in visitors:
        for name, fn in v.get_visitors().items():
            methods.setdefault(name, []).append(fn)
    if any(name.count("_") > 1 and name.split("_", 2)[2] in _all_fields(name) for name in methods):
        visit_batched(module, visitors, before_visit=before_visit, after_leave=after_leave)
        return
    enters: dict[type, tuple] = {}
    leaves: dict[type, tuple] = {}
    fields = _FIELDS
    no_calls: tuple = ()

    def walk(node: CSTNode) -> None:
        cls = type(node)
        entering = enters.get(cls)
        if entering is None:
            entering = enters[cls] = tuple(methods.get(f"visit_{cls.__name__}", no_calls))
            leaves[cls] = tuple(methods.get(f"leave_{cls.__name__}", no_calls))
        if before_visit is not None:
            before_visit(node)
        for fn in entering:
            fn(node)
        order = fields.get(cls) or child_fields(cls)
        for name in order:
            value = getattr(node, name)
            if isinstance(value, CSTNode):
                walk(value)
            elif isinstance(value, (tuple, list)):
                for child in value:
                    if isinstance(child, CSTNode):
                        walk(child)
        for fn in leaves[cls]:
            fn(node)
        if after_leave is not None:
            after_leave(node)

    walk(module)


def wrapper_walk_batched(wrapper: MetadataWrapper, visitors: Sequence[BatchableCSTVisitor],
                         before_visit: Callable[[CSTNode], None] | None = None,
                         after_leave: Callable[[CSTNode], None] | None = None) -> None:
    """``wrapper.visit_batched(visitors, before_visit, after_leave)``, reading the tree: each
    visitor's metadata resolved (``resolve``) around the walk of ``wrapper.module``."""
    with contextlib.ExitStack() as stack:
        for v in visitors:
            stack.enter_context(v.resolve(wrapper))
        walk_batched(wrapper.module, visitors, before_visit, after_leave)


def _all_fields(name: str) -> Iterable[str]:
    """The field names of the node class a ``visit_<Node>_...`` method name starts with."""
    import libcst

    cls = getattr(libcst, name.split("_", 2)[1], None)
    if not (isinstance(cls, type) and issubclass(cls, CSTNode)):
        return ()
    return {f.name for f in dataclasses.fields(cls)}
