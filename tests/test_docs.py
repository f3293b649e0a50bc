from pathlib import Path

from ts2export.engine.ruledocs import rules_document

ROOT = Path(__file__).resolve().parent.parent


def test_rules_doc_is_current():
    doc = ROOT / "docs" / "rules.md"
    assert doc.read_text(encoding="utf-8") == rules_document(), "docs/rules.md is stale: run `python -m ts2export.engine.ruledocs docs/rules.md`"
