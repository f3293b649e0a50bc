"""The rule API: the small public face that every rule imports, and all it imports.

A rule is one class in one module of ``ts2export.rules``. It carries its id, a one-line summary,
its documentation (the class docstring with the sections *What it does*, *Why*, *Example*,
*Fix safety*), the applicability of its fix, and examples (``VALID`` code it must leave alone,
``INVALID`` code with the result of its fix). The test suite runs every rule's examples, and
``docs/rules.md`` is generated from them.

Two kinds of rules exist (``base``):

* :class:`Rule` -- a libcst visitor over a Python module. It sees qualified names (every import
  spelling of ``torch.jit.script`` resolves to the same name) and reports findings with optional
  fixes: node replacements that the engine applies, re-parses and compiles.
* :class:`TextRule` -- a line-oriented check over other sources (C++), report-only.

What a rule may know beyond its file comes from the program model, through this package only:
``RuleContext.program`` (a :class:`ProgramView`, plain data about the other files) and
:mod:`ts2export.rule.callsites` (the call-site questions of the TSX3xx family).

Imports: ``ts2export.edits``, ``ts2export.quoting``, ``ts2export.model`` (the view and the call-site part) and libcst.
Rules never import the engine; the engine finds rules without naming them.
"""

from ts2export.edits import Applicability, Edit, Fix, Import, Replacement
from ts2export.model.callsites.syntax import argument
from ts2export.quoting import comment as comment_line, inline, inline_node
from ts2export.model.view import ProgramView, object_key
from ts2export.rule.base import TORCHSCRIPT_PREFIXES, Rule, TextRule, defs_from
from ts2export.rule.context import RuleContext
from ts2export.rule.examples import Invalid, Valid
from ts2export.rule.findings import Alternative, Finding, TextFinding

__all__ = [
    "Alternative",
    "Applicability",
    "Edit",
    "Finding",
    "Fix",
    "Import",
    "Invalid",
    "ProgramView",
    "Replacement",
    "Rule",
    "RuleContext",
    "TextRule",
    "Valid",
    "TORCHSCRIPT_PREFIXES",
    "TextFinding",
    "argument",
    "comment_line",
    "inline",
    "inline_node",
    "defs_from",
    "object_key",
]
