"""A rule's own examples, which are its tests: code it must leave alone, and code it must report
(with the code after its fix)."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Valid:
    """Code the rule must leave alone (no finding from this rule)."""

    code: str


@dataclass(frozen=True)
class Invalid:
    """Code the rule must report; ``expected`` is the code after its fix (None: report only).

    ``unsafe`` marks examples whose fix is only written with ``--unsafe-fixes``; ``count`` is the
    number of findings the rule must report (default: at least one). Examples run through the
    whole engine (the program model included), with this rule and ``with_rules`` selected."""

    code: str
    expected: str | None = None
    unsafe: bool = False
    count: int | None = None
    path: str = "example.py"
    #: Other rules applied with this one: a call site migrates with the rest of its unit (the
    #: trace and the save of its artifact, say), so the example shows them together.
    with_rules: tuple[str, ...] = ()
    #: Run as with ``--external-readers``: a reader whose artifact no file of the example writes
    #: (made elsewhere and converted first) is rewritten rather than held back.
    external_readers: bool = False
