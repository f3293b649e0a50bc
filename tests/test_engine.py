"""Engine behaviour: import spellings, imports managed, compile check, suppressions, encodings."""

import libcst as cst
import pytest

from ts2export import engine
from ts2export.engine import check
from ts2export.engine import Options, Task, process_bytes
from ts2export.rule import Applicability, Invalid, Rule, Valid


def run(code, fix=None, select=(), path="m.py"):
    data = code.encode() if isinstance(code, str) else code
    return process_bytes(data, Task(path, "python"), Options(select=tuple(select), fix=fix))


@pytest.mark.parametrize(
    "code",
    [
        "import torch\nx = torch.jit.annotate(int, 1)\n",
        "import torch as th\nx = th.jit.annotate(int, 1)\n",
        "import torch.jit as jit\nx = jit.annotate(int, 1)\n",
        "from torch import jit\nx = jit.annotate(int, 1)\n",
        "from torch.jit import annotate\nx = annotate(int, 1)\n",
        "from torch.jit import annotate as ann\nx = ann(int, 1)\n",
        "import torch.jit\nx = torch.jit.annotate(int, 1)\n",
    ],
)
def test_every_import_spelling_is_recognised(code):
    res = run(code, fix="safe")
    assert [f.rule_id for f in res.fixed] == ["TSX201"]
    assert res.new.decode().rstrip().endswith("x = 1")
    assert res.findings == []


def test_import_left_unused_is_removed_and_untouched_code_is_byte_identical():
    code = (
        "import os  # unrelated and unused: stays\n"
        "from torch.jit import annotate, script\n"
        "import torch\n\n\n"
        "x   =   annotate(int,   1)   # odd spacing elsewhere is kept\n"
        "y = {'a':1,   'b':2}\n"
        "f = script\n"
    )
    res = run(code, fix="safe", select=["TSX201"])
    assert res.new.decode() == (
        "import os  # unrelated and unused: stays\n"
        "from torch.jit import script\n"
        "import torch\n\n\n"
        "x   =   1   # odd spacing elsewhere is kept\n"
        "y = {'a':1,   'b':2}\n"
        "f = script\n"
    )


class _BreaksCode(Rule):
    """A rule whose fix produces code that does not compile (`return` outside a function)."""

    id = "TSX099"
    summary = "test rule"
    applicability = Applicability.SAFE
    VALID = [Valid("")]
    INVALID = [Invalid("")]

    def visit_Call(self, node: cst.Call) -> None:
        if self.matches(node.func, "torch.jit.annotate"):
            self.report(node, "bad", replacement=cst.parse_expression("(yield)"))


def test_fix_whose_result_does_not_compile_is_dropped_and_reported(monkeypatch):
    monkeypatch.setattr(check, "select_rules", lambda select, ignore: (_BreaksCode,))
    code = "import torch\nx = torch.jit.annotate(int, 1)\n"
    res = run(code, fix="safe")
    assert res.new is None and not res.changed
    assert res.notes and "would not compile" in res.notes[0] and "TSX099" in res.notes[0]
    assert [f.rule_id for f in res.findings] == ["TSX099"]


def test_suppression_comments():
    code = (
        "import torch\n"
        "a = torch.jit.annotate(int, 1)  # ts2export: ignore\n"
        "b = torch.jit.annotate(int, 2)  # ts2export: ignore[TSX201]\n"
        "c = torch.jit.annotate(int, 3)  # ts2export: ignore[TSX101]\n"
        "d = torch.jit.annotate(int, 4)\n"
    )
    res = run(code)
    assert [(f.rule_id, f.line) for f in res.findings] == [("TSX201", 4), ("TSX201", 5)]
    assert res.suppressed == 2


def test_catch_all_reports_what_no_rule_handles_and_yields_to_specific_rules():
    code = "import torch\nx = torch.jit.annotate(int, 1)\ntorch.jit.set_fusion_strategy([('STATIC', 2)])\n"
    res = run(code, select=["TSX001", "TSX201"])
    assert [(f.rule_id, f.line) for f in res.findings] == [("TSX201", 2), ("TSX001", 3)]


def test_prefilter_skips_files_without_torchscript(monkeypatch):
    calls = []
    monkeypatch.setattr(check, "process_python", lambda *a, **k: calls.append(a))
    run("import torch\nprint(torch.ones(1))\n")
    assert calls == []
    run("import torch\nx = torch.jit.annotate(int, 1)\n")
    assert len(calls) == 1


def test_syntax_error_is_one_line_and_nothing_changes():
    res = run("import torch\ndef f(:\n    torch.jit.annotate(int, 1)\n", fix="unsafe")
    assert res.error.startswith("syntax error at line 2")
    assert "\n" not in res.error and res.new is None


def test_latin1_with_coding_cookie_keeps_its_encoding():
    code = "# -*- coding: latin-1 -*-\nimport torch\nname = 'caf\xe9'\nx = torch.jit.annotate(int, torch.ones(1))\n"
    res = run(code.encode("latin-1"), fix="safe")
    assert res.error is None
    assert res.new == "# -*- coding: latin-1 -*-\nimport torch\nname = 'caf\xe9'\nx = torch.ones(1)\n".encode("latin-1")


def test_latin1_without_cookie_is_an_error_not_a_rewrite():
    res = run("import torch\nname = 'caf\xe9'\nx = torch.jit.annotate(int, 1)\n".encode("latin-1"), fix="safe")
    assert res.error and res.error.startswith("cannot decode") and res.new is None


def test_crlf_and_bom_are_kept():
    code = "\ufeffimport torch\r\nx = torch.jit.annotate(int, 1)\r\ny = torch.ones(1)\r\n"
    res = run(code.encode("utf-8"), fix="safe")
    assert res.new == "\ufeffimport torch\r\nx = 1\r\ny = torch.ones(1)\r\n".encode("utf-8")


def test_fixes_in_nested_constructs_converge_over_rounds():
    code = "import torch\nx = torch.jit.annotate(int, torch.jit.annotate(int, 1))\ny = torch.ones(1)\n"
    res = run(code, fix="safe")
    assert res.new.decode() == "import torch\nx = 1\ny = torch.ones(1)\n"
    assert len(res.fixed) == 2 and res.findings == []


def test_results_are_deterministic():
    code = "import torch\n" + "".join(f"v{i} = torch.jit.annotate(int, {i})\n" for i in range(30))
    first = [f.sort_key() for f in run(code).findings]
    assert first == sorted(first) and first == [f.sort_key() for f in run(code).findings]


def test_parallel_run_matches_serial(tmp_path):
    tasks = []
    for i in range(12):
        p = tmp_path / f"m{i:02d}.py"
        p.write_text(f"import torch\nx = torch.jit.annotate(int, {i})\n")
        tasks.append(Task(str(p), "python"))
    serial = engine.run(tasks, Options(fix="safe"), jobs=1)
    parallel = engine.run(tasks, Options(fix="safe"), jobs=2)
    assert [(r.path, r.new, [f.sort_key() for f in r.fixed]) for r in serial] == [
        (r.path, r.new, [f.sort_key() for f in r.fixed]) for r in parallel
    ]


def test_artifact_writers_and_readers_are_linked_across_files(tmp_path, run_cli):
    (tmp_path / "deploy.py").write_text(
        "import os\nimport torch\n\n\ndef deploy(model, out_dir):\n"
        "    torch.jit.save(torch.jit.script(model), os.path.join(out_dir, 'model.pt'))\n")
    (tmp_path / "serve.py").write_text(
        "import torch\nfrom pathlib import Path\n\n\ndef serve(out_dir):\n"
        "    return torch.jit.load(str(Path(out_dir) / 'model.pt'))\n")
    code, out, _ = run_cli("scan", "--jobs", "1", ".", cwd=tmp_path)
    assert "Artifacts (where each path is written and read; `*`: known at run time only):\n  */model.pt\n" in out
    assert "    writer  deploy.py:6:5 torch.jit.save(" in out and "    reader  serve.py:6:12 torch.jit.load(" in out
    code, out, _ = run_cli("scan", "--format", "json", "--jobs", "1", ".", cwd=tmp_path)
    import json

    links = json.loads(out)["artifacts"]["*/model.pt"]
    assert [(f["kind"], f["path"], f["line"]) for f in links] == [("writer", "deploy.py", 6), ("reader", "serve.py", 6)]
    assert links[0]["unit"] == links[1]["unit"]


def test_removing_the_first_import_leaves_no_leading_blank_lines():
    res = run("import torch\n\n\ndef f(x):\n    return torch.jit.annotate(int, x)\n", fix="safe", select=["TSX201"])
    assert res.new == b"def f(x):\n    return x\n"
    res = run("# licence\n\nimport torch\n\n\ndef f(x):\n    return torch.jit.annotate(int, x)\n", fix="safe", select=["TSX201"])
    assert res.new == b"# licence\n\ndef f(x):\n    return x\n"
