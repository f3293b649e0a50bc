"""Torch's errors that held-back units quote get a sentence and a docs/holds.md section: the errors
below are torch 2.13's own words for each class (seen in recordings' proofs and programs)."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from ts2export.model.decision import proof_failure
from ts2export.model.known_errors import KNOWN, explain, with_sentence

ROOT = Path(__file__).resolve().parent.parent

SEEN = {
    "quantized-modules": "AttributeError: __torch__.torch.classes.rnn.CellParamsBase (of Python compilation unit at: 0) "
                         "does not have a field with name '__obj_flatten__'",
    "non-leaf-parameters": "ValueError: Cannot assign non-leaf Tensor to parameter 'weight'. Model parameters must be "
                           "created explicitly.",
    "data-dependent-code": "GuardOnDataDependentSymNode: Could not guard on data-dependent expression Eq(u0, 1)",
    "specialized-sizes": "RuntimeError: Guard failed: x.size()[1] == 5",
    "scripted-children": "ValueError: Exporting a ScriptModule is not supported. Maybe try converting your "
                         "ScriptModule to an ExportedProgram using `TS2EPConverter(mod, args, kwargs).convert()` instead.",
    "custom-classes": "RuntimeError: Tried to trace <torch.ScriptObject object at 0x7f> but it is not registered",
}


@pytest.mark.parametrize("key", sorted(SEEN))
def test_each_class_is_recognised_and_documented(key):
    known = explain(SEEN[key])
    assert known is not None and known.key == key
    text = with_sentence(SEEN[key])
    assert text.startswith(SEEN[key]) and known.sentence in text and f"docs/holds.md#{key}" in text
    holds = (ROOT / "docs" / "holds.md").read_text()
    assert re.search(rf"^## {re.escape(key)}$", holds, re.M), f"docs/holds.md has no section {key}"


def test_every_known_class_has_a_seen_error():
    assert {k.key for k in KNOWN} == set(SEEN)


def test_an_unknown_error_is_quoted_as_it_is():
    assert explain("RuntimeError: something new") is None
    assert with_sentence("RuntimeError: something new") == "RuntimeError: something new"


def test_a_failed_proof_says_what_to_do():
    proof = {"verdict": "failed", "step": "export", "error": SEEN["quantized-modules"],
             "frame": ["classify.py", 12, "main"]}
    why = proof_failure(proof)
    assert "torch.export.export raised AttributeError" in why
    assert "dynamically quantized layers" in why and "docs/holds.md#quantized-modules" in why
    assert "in `main` (classify.py:12)" in why
