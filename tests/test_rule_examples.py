"""Every rule's own examples are its tests: VALID code yields no finding of that rule, INVALID
code yields findings and, where the example gives one, the result of the fix."""

import pytest

from ts2export.engine import Options, Task, analyze
from ts2export.engine.registry import all_rules
from ts2export.rule import Applicability

RULES = all_rules()


def _cases(kind):
    for rule in RULES:
        for i, example in enumerate(getattr(rule, kind)):
            yield pytest.param(rule, example, id=f"{rule.id}-{kind.lower()}-{i}")


def _process(rule, example, code: bytes, fix):
    """The whole engine (program model included) on the example as a one-file project."""
    path = getattr(example, "path", "example.py")
    if "cpp" in rule.file_kinds and path == "example.py":
        path = "example.cpp"
    task = Task(path, "cpp" if path.endswith((".cpp", ".cc", ".h", ".hpp")) else "python", data=code)
    select = (rule.id, *getattr(example, "with_rules", ()))
    options = Options(select=select, fix=fix, plan=fix or "safe", external_readers=getattr(example, "external_readers", False))
    [res] = analyze([task], options, jobs=1).results
    return res


def _run(rule, example, fix=None):
    res = _process(rule, example, example.code.encode(), fix)
    assert res.error is None, res.error
    assert not res.notes, res.notes
    return res


@pytest.mark.parametrize("rule,example", list(_cases("VALID")))
def test_valid_examples_are_left_alone(rule, example):
    res = _run(rule, example, fix="unsafe")
    assert res.findings == [] and res.fixed == []
    assert not res.changed


@pytest.mark.parametrize("rule,example", list(_cases("INVALID")))
def test_invalid_examples_are_reported_and_fixed(rule, example):
    res = _run(rule, example)
    found = [f for f in res.findings if f.rule_id == rule.id]
    if example.count is not None:
        assert len(found) == example.count, [f.message for f in found]
    else:
        assert found, f"{rule.id} reported nothing"
    for f in found:
        assert f.message and f.line >= 1 and f.column >= 1
    if example.expected is None:
        assert all(f.applicability is Applicability.NONE for f in found) or rule.applicability is not Applicability.NONE
        return
    fixed = _run(rule, example, fix="unsafe" if example.unsafe else "safe")
    assert fixed.new is not None, "the fix changed nothing"
    assert fixed.new.decode() == example.expected
    if not example.unsafe:
        assert all(f.applicability is Applicability.SAFE for f in found)
    else:
        safe_only = _run(rule, example, fix="safe")
        assert not safe_only.changed or safe_only.new.decode() != example.expected
    # Idempotent: fixing the result again changes nothing.
    again = _process(rule, example, fixed.new, "unsafe")
    assert not again.changed, again.new.decode()


def test_rules_are_documented():
    ids = [r.id for r in RULES]
    assert len(ids) == len(set(ids))
    for rule in RULES:
        sections = rule.doc_sections()
        assert rule.summary, rule.id
        for key in ("what it does", "why", "example", "fix safety"):
            assert sections.get(key), f"{rule.id} lacks a '{key}' section"
        assert rule.INVALID, f"{rule.id} has no INVALID example"
        assert rule.VALID, f"{rule.id} has no VALID example"


def test_inert_calls_run_nothing_when_called():
    """A rule's ``INERT_CALLS`` (removed where called as a statement outside a `with`) and the
    program model's (what such a call is handed is not used) are generator functions under
    contextlib.contextmanager on this torch: the call runs none of their code."""
    import contextlib
    import importlib
    import inspect

    from ts2export.engine.registry import all_rules
    from ts2export.model.torchapi import INERT_CALLS

    checked = 0
    for names in [*(getattr(rule, "INERT_CALLS", ()) for rule in all_rules()), INERT_CALLS]:
        for name in names:
            module, attr = name.rsplit(".", 1)
            fn = getattr(importlib.import_module(module), attr)
            assert inspect.isgeneratorfunction(inspect.unwrap(fn)), name
            assert isinstance(fn(True if "optimized" in attr else "fuser0"), contextlib._GeneratorContextManager), name
            checked += 1
    assert checked > len(INERT_CALLS)
