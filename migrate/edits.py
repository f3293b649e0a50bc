"""The vocabulary of a rewrite: an edit of a libcst node, the imports the new code needs, and how far
the fix can be trusted. Rules make fixes of these (through the rule API), the program model's
call-site plans build them, the engine applies them."""

from __future__ import annotations

import enum
from dataclasses import dataclass
from typing import TYPE_CHECKING, Union

if TYPE_CHECKING:  # libcst is imported where a fix is built or applied, not by the readers of results
    import libcst as cst


class Applicability(str, enum.Enum):
    """How far a fix can be trusted (ruff's scheme)."""

    SAFE = "safe"  # keeps behaviour; written by `apply`
    UNSAFE = "unsafe"  # may change behaviour; written by `apply --unsafe-fixes`
    NONE = "none"  # report only

    def __str__(self) -> str:  # pragma: no cover - trivial
        return self.value


@dataclass(frozen=True)
class Import:
    """An import that a fix needs: ``import module`` or ``from module import name [as asname]``."""

    module: str
    name: str | None = None
    asname: str | None = None


if TYPE_CHECKING:
    Replacement = Union[cst.CSTNode, cst.RemovalSentinel, cst.FlattenSentinel]


def __getattr__(name: str):
    if name == "Replacement":  # what an edit may replace a node with
        import libcst as cst

        return Union[cst.CSTNode, cst.RemovalSentinel, cst.FlattenSentinel]
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


@dataclass(frozen=True)
class Edit:
    """Replace ``node`` (a node of the module being checked) with ``replacement``."""

    node: cst.CSTNode
    replacement: Replacement


@dataclass(frozen=True)
class Fix:
    """An atomic set of edits plus the imports the new code needs."""

    edits: tuple[Edit, ...]
    imports: tuple[Import, ...] = ()
    applicability: Applicability = Applicability.SAFE
