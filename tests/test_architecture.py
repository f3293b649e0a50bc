"""Imports run one way: rules -> rule API; artifact wing never -> source wing; only the CLI knows both."""

import ast
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
SOURCE_WING = {"ts2export.engine", "ts2export.rule", "ts2export.engine.registry", "ts2export.rules", "ts2export.engine.discovery",
               "ts2export.ci.output", "ts2export.engine.corpus", "ts2export.engine.ruledocs", "ts2export.engine.config",
               "ts2export.ci.baseline", "ts2export.ci.changed", "ts2export.ci.gate", "ts2export.ci.report",
               "ts2export.engine.skipped", "ts2export.engine.cache", "ts2export.program_facts"}


def imports_of(path: Path) -> set[str]:
    tree = ast.parse(path.read_text(encoding="utf-8"))
    found = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            found.update(a.name for a in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            found.add(node.module)
            found.update(f"{node.module}.{a.name}" for a in node.names)
        elif isinstance(node, ast.ImportFrom) and node.level:
            found.add("." * node.level + (node.module or ""))
    return found


def test_rules_import_only_the_rule_api():
    for path in sorted((ROOT / "rules").glob("*.py")):
        for name in imports_of(path):
            if name.startswith("ts2export"):
                assert name == "ts2export.rule" or name.startswith("ts2export.rule.") or name.startswith("ts2export.rules._"), f"{path.name} imports {name}"


def test_artifact_wing_never_imports_the_source_wing_or_the_cli():
    files = sorted((ROOT / "migrate" / "artifact").glob("*.py"))
    art_cli = ROOT / "migrate" / "artifact_cli.py"
    if art_cli.exists():
        files.append(art_cli)
    for path in files:
        for name in imports_of(path):
            for banned in SOURCE_WING | {"ts2export.cli"}:
                assert not (name == banned or name.startswith(banned + ".")), f"{path.name} imports {name}"


def test_engine_names_no_rule():
    for path in sorted((ROOT / "migrate").glob("*.py")):
        for name in imports_of(path):
            assert not name.startswith("ts2export.rules."), f"{path.name} imports the rule {name}"
