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

import importlib

# Each name is imported from its module when first asked for (PEP 562): a reader of results (the CI
# gate, the cache) takes `Finding` and `Applicability` without libcst, which the rules' base needs.
_WHERE = {
    "Applicability": "ts2export.edits", "Edit": "ts2export.edits", "Fix": "ts2export.edits",
    "Import": "ts2export.edits", "Replacement": "ts2export.edits",
    "argument": "ts2export.model.callsites.syntax",
    "comment_line": ("ts2export.quoting", "comment"), "inline": "ts2export.quoting", "inline_node": "ts2export.quoting",
    "ProgramView": "ts2export.model.view", "object_key": "ts2export.model.view",
    "TORCHSCRIPT_PREFIXES": "ts2export.rule.base", "Rule": "ts2export.rule.base", "TextRule": "ts2export.rule.base",
    "defs_from": "ts2export.rule.base",
    "RuleContext": "ts2export.rule.context",
    "Invalid": "ts2export.rule.examples", "Valid": "ts2export.rule.examples",
    "Alternative": "ts2export.rule.findings", "Finding": "ts2export.rule.findings", "TextFinding": "ts2export.rule.findings",
}


def __getattr__(name: str):
    where = _WHERE.get(name)
    if where is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    module, attr = where if isinstance(where, tuple) else (where, name)
    value = getattr(importlib.import_module(module), attr)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted([*globals(), *_WHERE])


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
