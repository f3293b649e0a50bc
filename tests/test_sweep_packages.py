"""The pure parts of scripts/sweep_packages.py (issue 30): output parsing, classification, resumption,
rendering and the document update. No network, no package."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "scripts"))
import sweep_packages as sp  # noqa: E402


def _rec(**kw):
    base = {"name": "pkg", "version": "1.0", "files": 10, "findings": 3, "fixed": 2, "internal_errors": [],
            "broken": [], "not_idempotent": [], "timeouts": [], "seconds": 12.0}
    return {**base, **kw}


def test_internal_errors_are_found_in_the_output():
    text = ("a.py: fixed 1, left 0\nerror: b.py: internal error while checking (KeyError: 'x'); please report it\n"
            "Traceback (most recent call last):\n  File ...\n")
    found = sp.internal_errors(text)
    assert len(found) == 2 and found[0].startswith("internal error while checking (KeyError")
    assert sp.internal_errors("Fixed 0 findings in 0 files.") == []


def test_apply_output_is_parsed():
    out = ("m.py: fixed 2, left 1\n\nLeft for a person:\n  m.py:3:5: TSX302 `torch.jit.script(m)` needs inputs\n"
           "\nFixed 2 findings in 1 file. 1 left\n")
    assert sp.parse_apply(out) == (2, 1, 1)
    assert sp.parse_apply("Fixed 1 finding in 1 file.") == (1, 1, 0)
    assert sp.parse_apply("") == (0, 0, 0)


@pytest.mark.parametrize("text,n", [
    (json.dumps({"findings": [{}, {}, {}]}), 3),
    (json.dumps({"results": [{"path": "a", "findings": [{}, {}]}, {"path": "b", "findings": [{}]}]}), 3),
    (json.dumps([{}, {}]), 2),
    ("not json", None),
])
def test_scan_findings_are_counted(text, n):
    assert sp.count_findings(text) == n


def test_classification():
    assert sp.classify(_rec()) == []
    assert sp.classify(_rec(internal_errors=["scan: internal error"], broken=["a.py"], not_idempotent=["b.py"],
                            timeouts=["apply"], seconds=400)) == [
        "internal error", "non-compiling output", "non-idempotent apply", "timeout", "slow"]
    assert sp.classify({"name": "x", "failure": "no archive"}) == ["not measured"]


def test_resumption_skips_finished_packages_unless_forced(monkeypatch):
    monkeypatch.setattr(sp, "PACKAGES", {"a": sp.Package("a", "1"), "b": sp.Package("b", "2"),
                                         "c": sp.Package("c", "3"), "d": sp.Package("d", "4")})
    results = {"a": _rec(name="a", version="1"), "b": _rec(name="b", version="1"),  # b: another version
               "c": {"name": "c", "version": "3", "failure": "download"}}  # a failure is retried
    assert sp.pending(["a", "b", "c", "d"], results, force=False) == ["b", "c", "d"]
    assert sp.pending(["a", "b"], results, force=True) == ["a", "b"]


def test_archive_names():
    assert sp.archive_matches("mace_torch-0.3.6.tar.gz", sp.Package("mace-torch", "0.3.6"))
    assert sp.archive_matches("pyannote_audio-4.0.7-py3-none-any.whl", sp.Package("pyannote.audio", "4.0.7", "wheel"))
    assert not sp.archive_matches("pyannote_audio-4.0.7-py3-none-any.whl", sp.Package("pyannote.audio", "4.0.7"))
    assert not sp.archive_matches("kornia-0.9.0.tar.gz", sp.Package("kornia", "0.9"))
    assert not sp.archive_matches("kornia_rs-0.9.0.tar.gz", sp.Package("kornia", "0.9.0"))


def test_rendering_and_totals():
    results = {"b": _rec(name="b", seconds=30.5, broken=["x|y.py"]), "a": _rec(name="a"),
               "c": {"name": "c", "version": "2", "failure": "pip download left no archive"}}
    t = sp.totals(results)
    assert t["packages"] == 3 and t["measured"] == 2 and t["broken"] == 1 and t["slowest"] == ("b", 30.5)
    md = sp.render_markdown(results, {"date": "2026-12-04", "ts2export": "0.1", "torch": "2.x",
                                      "command": "python scripts/sweep_packages.py --write-docs"})
    assert md.startswith(sp.DOC_BEGIN) and md.endswith(sp.DOC_END)
    rows = [line for line in md.splitlines() if line.startswith("| ") and not line.startswith("| package")]
    assert [r.split(" | ")[0] for r in rows] == ["| a", "| b", "| c"]  # sorted, one per package
    assert "x\\|y.py" in rows[1] and "non-compiling output" in rows[1]
    assert "not measured (pip download left no archive)" in rows[2]
    assert "2026-12-04" in md and "python scripts/sweep_packages.py --write-docs" in md
    with_missing = sp.render_markdown(results, {}, expected=["a", "z"])
    assert "| z | ? | | | | | | | | | not run yet |" in with_missing


def test_the_doc_update_keeps_the_rest_of_the_file():
    section = sp.DOC_BEGIN + "\nnew\n" + sp.DOC_END
    doc = "# Reliability\n\nother sections\n"
    once = sp.update_doc(doc, section)
    assert once.startswith(doc.rstrip("\n")) and once.endswith(section + "\n")
    again = sp.update_doc(once.replace("new", "old"), section)
    assert again == once and again.count(sp.DOC_BEGIN) == 1


def test_exit_status():
    assert sp.exit_status({"a": _rec()}) == 0
    assert sp.exit_status({"a": _rec(timeouts=["scan"])}) == 1
    assert sp.exit_status({"a": _rec(), "b": {"name": "b", "failure": "x"}}) == 2
