"""Baseline fingerprints: what changes them and what does not."""

from pathlib import Path

from ts2export.ci.baseline import Baseline, Entry, Scope, compare, fingerprint_findings, load, write
from ts2export.rule import Applicability, Finding


def fingerprints(tmp_path: Path, name: str, text: str, spans: list[tuple]) -> list[Entry]:
    path = tmp_path / name
    path.write_text(text)
    findings = [Finding("TSX301", str(path), line, col, "m", Applicability.NONE, end_line, end_col)
                for line, col, end_line, end_col in spans]
    return [e for _, e in fingerprint_findings(findings, tmp_path)]


def test_line_shifts_comments_and_whitespace_keep_the_fingerprint(tmp_path):
    (a,) = fingerprints(tmp_path, "m.py", "import torch\nt = torch.jit.trace(m, x)\n", [(2, 5, 2, 26)])
    moved = '"""Doc."""\n\n# a comment\nimport torch\n\nt = torch.jit.trace(  m,\n    x  # the input\n)\n'
    (b,) = fingerprints(tmp_path, "m.py", moved, [(6, 5, 8, 2)])
    assert a.code == b.code == "torch.jit.trace(m,x)" and a.fingerprint == b.fingerprint
    (c,) = fingerprints(tmp_path, "m.py", "import torch\n\n\nt = torch.jit.trace(m,x)  # old\n", [(4, 5, 4, 25)])
    assert c.fingerprint == a.fingerprint and c.path == "m.py" and c.line == 4
    (d,) = fingerprints(tmp_path, "m.py", "import torch\nt = torch.jit.trace(model, x)\n", [(2, 5, 2, 30)])
    assert d.fingerprint != a.fingerprint  # the construct itself changed


def test_words_do_not_merge_and_compound_statements_stop_at_their_header(tmp_path):
    text = "import torch\nif not torch.jit.is_scripting():\n    y = 1\n    z = 2\n"
    (e,) = fingerprints(tmp_path, "m.py", text, [(2, 1, 4, 10)])
    assert e.code == "if not torch.jit.is_scripting():"
    (f,) = fingerprints(tmp_path, "m.py", text.replace("z = 2", "z = 3"), [(2, 1, 4, 10)])
    assert f.fingerprint == e.fingerprint  # an edit in the block is not an edit of the construct


def test_cpp_rest_of_line_without_comments(tmp_path):
    (e,) = fingerprints(tmp_path, "m.cpp", 'auto m  =  torch::jit::load("m.pt");   // old\n', [(1, 12, 1, 0)])
    assert e.code == 'torch::jit::load("m.pt");'


def test_occurrences_path_and_rule_are_part_of_it(tmp_path):
    text = "import torch\na = torch.jit.trace(m, x)\nb = torch.jit.trace(m, x)\n"
    a, b = fingerprints(tmp_path, "m.py", text, [(2, 5, 2, 26), (3, 5, 3, 26)])
    assert (a.occurrence, b.occurrence) == (0, 1) and a.fingerprint != b.fingerprint
    (sub,) = fingerprints(tmp_path, "pkg_m.py", "import torch\na = torch.jit.trace(m, x)\n", [(2, 5, 2, 26)])
    assert sub.fingerprint != a.fingerprint


def test_compare_scope_and_update_semantics(tmp_path):
    e = lambda fp, path, rule="TSX301": Entry(fp, rule, path, "code", 0, 1)  # noqa: E731
    base = Baseline([e("a", "pkg/x.py"), e("b", "pkg/y.py"), e("c", "tools/z.py"), e("d", "pkg/broken.py")])
    now_finding = Finding("TSX301", "pkg/x.py", 1, 1, "m", Applicability.NONE)
    new_finding = Finding("TSX301", "pkg/n.py", 1, 1, "m", Applicability.NONE)
    current = [(now_finding, e("a", "pkg/x.py")), (new_finding, e("n", "pkg/n.py"))]
    scope = Scope(("pkg",), lambda rule, path: True, frozenset({"pkg/broken.py"}))
    cmp = compare(current, base, scope)
    assert [f for f, _ in cmp.new] == [new_finding]
    assert [x.fingerprint for x in cmp.gone] == ["b"]  # tools/ is outside, broken.py was not checked
    assert sorted(x.fingerprint for x in cmp.updated().entries) == ["a", "c", "d"]  # never adds "n"
    assert sorted(x.fingerprint for x in cmp.recorded().entries) == ["a", "c", "d", "n"]
    path = tmp_path / "b.json"
    assert write(path, cmp.updated()) is True
    assert write(path, cmp.updated()) is False  # same content: not rewritten
    assert sorted(x.fingerprint for x in load(path).entries) == ["a", "c", "d"]
