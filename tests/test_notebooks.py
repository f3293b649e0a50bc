"""Notebooks (.ipynb): their code cells are checked and fixed as one module (ts2export.engine.notebooks);
findings name the cell; outputs, metadata and magics are kept byte for byte."""

import json
from pathlib import Path

from ts2export.engine import notebooks

PINNED = '[tool.ts2export]\nselect = ["TSX001", "TSX201"]\n'


def code(*lines, count=None, outputs=None, metadata=None):
    return {"cell_type": "code", "execution_count": count, "metadata": metadata or {}, "outputs": outputs or [],
            "source": [line + "\n" for line in lines[:-1]] + list(lines[-1:])}


def notebook(*cells) -> str:
    doc = {"cells": list(cells), "metadata": {"kernelspec": {"name": "python3", "display_name": "Python 3"}},
           "nbformat": 4, "nbformat_minor": 5}
    return json.dumps(doc, indent=1, ensure_ascii=False, sort_keys=True) + "\n"  # as Jupyter writes


OUTPUT = {"name": "stdout", "output_type": "stream", "text": ["tensor([1.]) é\n"]}
NB = notebook(
    {"cell_type": "markdown", "metadata": {}, "source": ["# Title"]},
    code("%matplotlib inline", "!pip install torch", "import torch", count=1),
    code("x = torch.jit.annotate(int, torch.ones(1))", "print(x)", count=2, outputs=[OUTPUT], metadata={"tags": ["a"]}),
    code("%%capture", "torch.jit.annotate(int, 1)", count=3),
    code("%timeit torch.ones(2)", "y = torch.jit.annotate(int, torch.ones(2))", count=4),
)


def project(tmp_path: Path, files: dict) -> Path:
    (tmp_path / "pyproject.toml").write_text(PINNED)
    for name, content in files.items():
        (tmp_path / name).write_text(content, encoding="utf-8")
    return tmp_path


def test_findings_name_the_cell_and_the_line_in_it(tmp_path, run_cli):
    project(tmp_path, {"nb.ipynb": NB})
    code_, out, err = run_cli("check", "--format", "text", ".", cwd=tmp_path)
    assert code_ == 1, out + err
    assert "nb.ipynb:cell 3:1:5: TSX201" in out
    assert "nb.ipynb:cell 5:2:5: TSX201" in out
    assert "cell 4" not in out  # a cell magic's cell is not Python: left alone
    code_, out, err = run_cli("check", "--format", "json", ".", cwd=tmp_path)
    doc = json.loads(out)
    found = [(f["path"], f["cell"], f["line"], f["column"]) for f in doc["findings"]]
    assert found == [("nb.ipynb", 3, 1, 5), ("nb.ipynb", 5, 2, 5)]
    code_, out, err = run_cli("check", "--format", "sarif", ".", cwd=tmp_path)
    results = json.loads(out)["runs"][0]["results"]
    assert [(r["properties"]["cell"], r["locations"][0]["physicalLocation"]["region"]["startLine"]) for r in results] == [(3, 1), (5, 2)]


def test_apply_rewrites_only_code_cells_and_keeps_the_rest(tmp_path, run_cli):
    project(tmp_path, {"nb.ipynb": NB})
    code_, out, err = run_cli("apply", ".", cwd=tmp_path)
    assert code_ == 0, out + err
    data = (tmp_path / "nb.ipynb").read_text(encoding="utf-8")
    expected = json.loads(NB)
    expected["cells"][2]["source"] = ["x = torch.ones(1)\n", "print(x)"]
    expected["cells"][4]["source"] = ["%timeit torch.ones(2)\n", "y = torch.ones(2)"]
    assert data == json.dumps(expected, indent=1, ensure_ascii=False) + "\n"  # outputs, metadata, counts, magics kept
    assert "%%capture" in data and "!pip install torch" in data and "%matplotlib inline" in data
    code_, out, err = run_cli("apply", ".", cwd=tmp_path)
    assert (tmp_path / "nb.ipynb").read_text(encoding="utf-8") == data  # nothing left to do


def test_nothing_to_change_leaves_the_notebook_byte_for_byte(tmp_path, run_cli):
    odd = NB.replace('\n "metadata"', '\n  "metadata"').replace("torch.jit.annotate(int, torch.ones(1))", "torch.ones(1)")
    clean = NB.replace("torch.jit.annotate(int, torch.ones(1))", "torch.ones(1)").replace(
        "torch.jit.annotate(int, torch.ones(2))", "torch.ones(2)").replace("torch.jit.annotate(int, 1)", "1")
    project(tmp_path, {"clean.ipynb": clean})
    before = (tmp_path / "clean.ipynb").read_bytes()
    assert run_cli("apply", ".", cwd=tmp_path)[0] == 0
    assert (tmp_path / "clean.ipynb").read_bytes() == before
    nb = notebooks.read(before)
    assert notebooks.write(nb, before, nb.code) == before  # the round trip through the json module
    assert not notebooks.faithful(notebooks.read(odd.encode()), odd.encode())  # never rewritten: not json's layout


def test_a_notebook_json_does_not_reproduce_is_not_written(tmp_path, run_cli):
    odd = NB.replace('\n "metadata"', '\n  "metadata"')
    project(tmp_path, {"odd.ipynb": odd})
    code_, out, err = run_cli("apply", ".", cwd=tmp_path)
    assert code_ == 2 and "cannot rewrite faithfully" in err
    assert (tmp_path / "odd.ipynb").read_text(encoding="utf-8") == odd


def test_a_cell_that_does_not_parse_is_named_and_left_alone(tmp_path, run_cli):
    nb = notebook(code("import torch"), code("x = torch.jit.annotate(int, torch.ones(1))"),
                  code("def f(:", "    torch.jit.annotate(int, 1)"))
    project(tmp_path, {"nb.ipynb": nb})
    code_, out, err = run_cli("apply", ".", cwd=tmp_path)
    assert code_ == 2 and "nb.ipynb: error: cell 3 not checked: syntax error at line 1" in err
    doc = json.loads((tmp_path / "nb.ipynb").read_text())
    assert doc["cells"][1]["source"] == ["x = torch.ones(1)"]  # the other cells are fixed
    assert doc["cells"][2]["source"] == json.loads(nb)["cells"][2]["source"]


def test_notebook_and_script_form_one_unit(tmp_path, run_cli):
    nb = notebook(code("import torch", "net = torch.nn.Linear(3, 2).eval()"),
                  code("traced = torch.jit.trace(net, torch.randn(4, 3))"),
                  code('torch.jit.save(traced, "model.pt")'))
    serve = 'import torch\n\n\ndef predict(x):\n    return torch.jit.load("model.pt")(x)\n'
    (tmp_path / "pyproject.toml").write_text("[tool.ts2export]\n")
    (tmp_path / "train.ipynb").write_text(nb)
    (tmp_path / "serve.py").write_text(serve)
    code_, out, err = run_cli("check", "--format", "json", ".", cwd=tmp_path)
    doc = json.loads(out)
    findings = doc["findings"]
    assert [(s["kind"], s["path"], s.get("cell"), s["line"]) for s in doc["artifacts"]["model.pt"]] == [
        ("reader", "serve.py", None, 5), ("writer", "train.ipynb", 3, 1)]
    units = {(f["path"], f["unit"]) for f in findings}
    assert {p for p, _ in units} == {"train.ipynb", "serve.py"}
    assert len({u for _, u in units}) == 1 and None not in {u for _, u in units}, units
    run_cli("apply", "--unsafe-fixes", ".", cwd=tmp_path)
    assert "torch.jit" not in (tmp_path / "serve.py").read_text()
    cells = json.loads((tmp_path / "train.ipynb").read_text())["cells"]
    assert "torch.jit" not in "".join(s for c in cells for s in c["source"])


def test_baseline_knows_a_notebook_finding_again_when_cells_move(tmp_path, run_cli):
    project(tmp_path, {"nb.ipynb": NB})
    (tmp_path / "pyproject.toml").write_text(PINNED + 'baseline = "ts2export-baseline.json"\n')
    code_, out, err = run_cli("baseline", "--no-progress", ".", cwd=tmp_path)
    assert code_ == 0, out + err
    entries = json.loads((tmp_path / "ts2export-baseline.json").read_text())
    entries = entries["findings"]
    assert sorted(e["code"] for e in entries) == ["torch.jit.annotate(int,torch.ones(1))",
                                                 "torch.jit.annotate(int,torch.ones(2))"]
    doc = json.loads(NB)
    doc["cells"].insert(1, code("import math", "print(math.pi)"))  # every cell moves down by one
    (tmp_path / "nb.ipynb").write_text(json.dumps(doc, indent=1, ensure_ascii=False) + "\n", encoding="utf-8")
    code_, out, err = run_cli("check", "--no-progress", ".", cwd=tmp_path)
    assert code_ == 0, out + err
    assert "2 known findings not shown, 0 new" in out


def test_positions_in_what_findings_say_name_the_cell(tmp_path, run_cli):
    nb = notebook(code("import torch", "net = torch.nn.Linear(3, 2).eval()"),
                  code("scripted = torch.jit.script(net)"),
                  code("scripted.save('model.pt')", "print(scripted.graph)"))
    (tmp_path / "pyproject.toml").write_text("[tool.ts2export]\n")
    (tmp_path / "train.ipynb").write_text(nb)
    (tmp_path / "serve.py").write_text('import torch\n\n\ndef predict(x):\n    return torch.jit.load("model.pt")(x)\n')
    code_, out, err = run_cli("check", "--unsafe-fixes", ".", cwd=tmp_path)
    assert "`torch.jit.script(net)` at train.ipynb:cell 2:1, which makes a value that train.ipynb:cell 3:2 uses" in out
    assert "train.ipynb:cell 3:1:1: TSX303" in out and "(see the finding at cell 2, line 1)" in out
    code_, out, err = run_cli("report", "--format", "markdown", "-o", "report.md", ".", cwd=tmp_path)
    report = (tmp_path / "report.md").read_text()
    assert "| `train.ipynb:cell 2:1` | `TSX302` |" in report and "| `train.ipynb:cell 3:1` | `TSX303` |" in report


def test_magics_shell_escapes_and_help_lines_survive_a_fix(tmp_path, run_cli):
    cell = code("import torch", "files = !ls", "torch.ones?", "if True:", "    %time y = 1",
                "    x = torch.jit.annotate(int, torch.ones(1))", "?torch")
    project(tmp_path, {"nb.ipynb": notebook(cell)})
    code_, out, err = run_cli("apply", ".", cwd=tmp_path)
    assert code_ == 0, out + err
    source = json.loads((tmp_path / "nb.ipynb").read_text())["cells"][0]["source"]
    assert source == [line.replace("torch.jit.annotate(int, torch.ones(1))", "torch.ones(1)") for line in cell["source"]]


def test_a_fix_that_removes_the_first_line_of_a_cell_writes_back_into_the_right_cells(tmp_path, run_cli):
    nb = notebook(code("import torch"), code("from torch.jit import annotate", "x = annotate(int, torch.ones(1))"),
                  code("print(x)"))
    project(tmp_path, {"nb.ipynb": nb})
    code_, out, err = run_cli("apply", ".", cwd=tmp_path)
    assert code_ == 0, out + err
    cells = json.loads((tmp_path / "nb.ipynb").read_text())["cells"]
    assert [c["source"] for c in cells] == [["import torch"], ["x = torch.ones(1)"], ["print(x)"]]


def test_a_notebook_is_never_the_module_an_import_finds():
    from ts2export.model.files import Files

    files = Files({"train.ipynb": b"x = 1\n", "train.py": b"y = 1\n"})
    assert files.modules["train"] == ["train.py"]
