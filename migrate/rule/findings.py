"""What a check reports: a finding in a Python file (with its fix, and the program model's verdict on
it), and a finding of a text rule."""

from __future__ import annotations

from dataclasses import dataclass, field

from ts2export.edits import Applicability, Fix
from ts2export.quoting import one_line


@dataclass(frozen=True)
class Alternative:
    """A second fix a rule offers for a finding (its edits and imports), which the program model
    takes when the first one must wait (``torch.jit.script(m)`` whose export would stop runs ``m``
    eager instead). ``message`` becomes the finding's message then, with ``{why}`` replaced by why
    the first fix waits."""

    edits: tuple
    imports: tuple = ()
    message: str = ""


_SAID = frozenset({"message", "held", "held_unsafe", "switched", "alternative_message"})


@dataclass
class Finding:
    """One TorchScript construct found in a file."""

    rule_id: str
    path: str
    line: int  # 1-based
    column: int  # 1-based
    message: str
    applicability: Applicability
    end_line: int = 0
    end_column: int = 0
    fixed: bool = False
    fallback: bool = False
    fix: Fix | None = field(default=None, repr=False, compare=False)
    anchor: str = ""  # stable name of the finding within its file (rule, top-level definition, code)
    defs: tuple[str, ...] = ()  # qualified names of the definitions around it, innermost first
    fix_spans: tuple = ()  # ((line, col), (end_line, end_col), code written) of each node its fix replaces
    held: str | None = None  # why the program model holds its fix back (None: not held)
    held_unsafe: str | None = None  # an unsafe fix reported by a safe plan: why `apply --unsafe-fixes` would hold it
    unit: str | None = None  # the migration unit it belongs to (see docs/units.md)
    alternative: Fix | None = field(default=None, repr=False, compare=False)  # the second fix; dropped with ``fix``
    alternative_message: str | None = None  # the alternative's message (kept: plain data)
    alternative_spans: tuple | None = None  # fix_spans of the alternative (None: there is none)
    switched: str | None = None  # why the program model chose the alternative fix (None: it did not)
    cell: int | None = None  # in a notebook: the cell (1-based); line and end_line are then within it

    def __setattr__(self, name: str, value) -> None:
        # what a finding says is one line wherever it is set (quoted code may span lines)
        if name in _SAID and isinstance(value, str):
            value = one_line(value)
        object.__setattr__(self, name, value)

    def switch(self, why: str) -> None:
        """Take the alternative fix (the program model's choice): its fix, spans and message."""
        self.switched = why
        self.message = (self.alternative_message or self.message).replace("{why}", why)
        self.fix = self.alternative
        self.fix_spans = self.alternative_spans or ()
        self.alternative = self.alternative_message = self.alternative_spans = None

    @property
    def fixable(self) -> bool:
        return self.applicability is not Applicability.NONE and not self.held

    def sort_key(self) -> tuple:
        return (self.path, self.cell or 0, self.line, self.column, self.rule_id, self.message)

    @property
    def where(self) -> str:
        """``path:line:column``, in a notebook ``path:cell N:line:column``."""
        cell = f"cell {self.cell}:" if self.cell is not None else ""
        return f"{self.path}:{cell}{self.line}:{self.column}"

    def to_dict(self) -> dict:
        return {
            "rule": self.rule_id,
            "path": self.path,
            "line": self.line,
            "column": self.column,
            "end_line": self.end_line,
            "end_column": self.end_column,
            "message": self.message,
            "fix": self.applicability.value,
            "fixed": self.fixed,
            "held_back": self.held or (f"with --unsafe-fixes: {self.held_unsafe}" if self.held_unsafe else None),
            "unit": self.unit,
            **({"cell": self.cell} if self.cell is not None else {}),
        }


@dataclass(frozen=True)
class TextFinding:
    line: int  # 1-based
    column: int  # 1-based
    message: str
