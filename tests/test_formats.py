import json
from pathlib import Path

import jsonschema

from tests.test_cli import make_tree

SCHEMA = Path(__file__).parent / "data" / "sarif-2.1.0-rtm.5.json"


def test_json_output_parses(tmp_path, run_cli):
    make_tree(tmp_path)
    code, out, _ = run_cli("check", "--format", "json", ".", cwd=tmp_path)
    assert code == 1
    doc = json.loads(out)
    assert doc["summary"]["findings"] == 3 and doc["summary"]["by_rule"] == {"TSX001": 1, "TSX101": 1, "TSX201": 1}
    first = doc["findings"][0]
    assert first == {
        "rule": "TSX001", "path": "pkg/knobs.py", "line": 3, "column": 1, "end_line": 3, "end_column": 30,
        "message": first["message"], "fix": "none", "fixed": False, "held_back": None, "unit": None,
    }


def test_sarif_validates_against_the_2_1_0_schema(tmp_path, run_cli):
    make_tree(tmp_path)
    (tmp_path / "pkg" / "broken.py").write_text("import torch\ndef f(:\n  torch.jit.script(f)\n")
    code, out, _ = run_cli("check", "--format", "sarif", "--output", "report.sarif", ".", cwd=tmp_path)
    assert code == 2 and out == ""
    doc = json.loads((tmp_path / "report.sarif").read_text())
    jsonschema.validate(doc, json.loads(SCHEMA.read_text()))
    run = doc["runs"][0]
    assert [r["ruleId"] for r in run["results"]] == ["TSX001", "TSX101", "TSX201"]
    assert run["invocations"][0]["executionSuccessful"] is False
    for result in run["results"]:
        assert run["tool"]["driver"]["rules"][result["ruleIndex"]]["id"] == result["ruleId"]


def test_github_annotations(tmp_path, run_cli):
    make_tree(tmp_path)
    code, out, _ = run_cli("check", "--format", "github", ".", cwd=tmp_path)
    assert code == 1
    lines = out.splitlines()
    assert len(lines) == 3
    assert lines[1].startswith("::warning file=pkg/model.py,line=6,col=5,endLine=6,title=TSX101::`@torch.jit.unused`")
