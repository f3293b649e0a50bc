"""Issue 3's proof: over a module that mixes every catalogued construct, `apply --unsafe-fixes`
leaves code that imports, runs eagerly with the original's outputs (corpus harness) and exports
with torch.export.export; `check` lists exactly what a person still has to do."""

from pathlib import Path

import torch

from ts2export.harness.corpus import import_program, load_case, migrate_tree

CASE = Path(__file__).resolve().parent.parent / "corpus" / "catalog_mixed" / "everything"


def _load_golden():
    return import_program(CASE / "after" / "main.py", "catalog_mixed_golden")


def test_migrated_module_exports_and_matches_eager():
    golden = _load_golden()
    torch.manual_seed(0)
    model = golden.Experts().eval()
    for i in range(2):
        x = torch.randn(3, 5)
        ep = torch.export.export(model, (x, i))
        exported = ep.module()
        other = torch.randn(3, 5)
        torch.testing.assert_close(exported(other, i), model(other, i))


def test_check_lists_exactly_what_is_left():
    case = load_case(CASE)
    migration = migrate_tree(case)
    assert dict(migration.remaining) == {"TSX204": 1, "TSX704": 1}
