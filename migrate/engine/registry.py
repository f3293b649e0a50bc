"""Finds the rules in ``ts2export.rules`` without naming any of them."""

from __future__ import annotations

import functools
import importlib
import pkgutil
from typing import TYPE_CHECKING, Iterable, Union

if TYPE_CHECKING:  # the rules (and libcst) are imported when first asked for, not by importing this
    from ts2export.rule import Rule, TextRule

    AnyRule = Union[type[Rule], type[TextRule]]


@functools.lru_cache(maxsize=None)
def all_rules() -> tuple[AnyRule, ...]:
    """Every rule class, sorted by id. Each module of ``ts2export.rules`` holds one rule."""
    import ts2export.rules as package
    from ts2export.rule import Rule, TextRule

    found: dict[str, AnyRule] = {}
    for info in sorted(pkgutil.iter_modules(package.__path__), key=lambda i: i.name):
        if info.name.startswith("_"):
            continue
        module = importlib.import_module(f"{package.__name__}.{info.name}")
        for obj in vars(module).values():
            if (
                isinstance(obj, type)
                and issubclass(obj, (Rule, TextRule))
                and obj not in (Rule, TextRule)
                and obj.__module__ == module.__name__
                and obj.id
            ):
                if obj.id in found and found[obj.id] is not obj:
                    raise RuntimeError(f"rule id {obj.id} is used twice: {found[obj.id].__module__}, {module.__name__}")
                found[obj.id] = obj
    return tuple(found[k] for k in sorted(found))


def rule_by_id(rule_id: str) -> AnyRule | None:
    for rule in all_rules():
        if rule.id == rule_id.upper() or rule.name() == rule_id.lower():
            return rule
    return None


def matches_selector(rule_id: str, selectors: Iterable[str]) -> bool:
    """A selector is a full id (``TSX101``), a prefix (``TSX1``, ``TSX``) or ``ALL``."""
    for s in selectors:
        s = s.strip().upper()
        if s == "ALL" or rule_id.startswith(s):
            return True
    return False


def select_rules(select: Iterable[str] | None, ignore: Iterable[str] = ()) -> tuple[AnyRule, ...]:
    select = list(select) if select else ["ALL"]
    ignore = list(ignore)
    return tuple(r for r in all_rules() if matches_selector(r.id, select) and not matches_selector(r.id, ignore))


def known_selector(selector: str) -> bool:
    s = selector.strip().upper()
    return s == "ALL" or any(r.id.startswith(s) for r in all_rules())
