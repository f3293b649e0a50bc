"""The CI gate on a sample git repository: baseline ratchet and changed files (issue 12's "done when")."""

import json
import subprocess
from pathlib import Path

import pytest

EXPORT = '''import torch


class Net(torch.nn.Module):
    @torch.jit.unused
    def debug(self, x):
        return x

    def forward(self, x):
        return x * 2


def export(model: torch.nn.Module, x):
    traced = torch.jit.trace(model, x)
    torch.jit.save(traced, "model.pt")
    return traced
'''
SERVE = '''import torch

model = torch.jit.load("model.pt")
torch.jit.set_fusion_strategy([("STATIC", 2)])
'''
CLEAN = "import torch\n\n\ndef double(x):\n    return x * 2\n"
CONFIG = '[project]\nname = "sample"\n\n[tool.ts2export]\nbaseline = "ts2export-baseline.json"\n'


def git(root: Path, *args: str) -> str:
    return subprocess.run(["git", *args], cwd=root, check=True, capture_output=True, text=True).stdout


def commit(root: Path, message: str) -> None:
    git(root, "add", "-A")
    git(root, "-c", "user.name=t", "-c", "user.email=t@example.com", "commit", "-q", "-m", message)


def sample_repo(root: Path) -> Path:
    (root / "pkg").mkdir(parents=True)
    (root / "tools").mkdir()
    (root / "pkg" / "export.py").write_text(EXPORT)
    (root / "pkg" / "clean.py").write_text(CLEAN)
    (root / "tools" / "serve.py").write_text(SERVE)
    (root / "pyproject.toml").write_text(CONFIG)
    git(root, "init", "-q")
    commit(root, "sample")
    return root


def finding_lines(out: str) -> list[str]:
    return [line for line in out.splitlines() if line.startswith(("pkg/", "tools/"))]


def test_done_when_baseline_ratchet_and_changed_files(tmp_path, run_cli):
    repo = sample_repo(tmp_path)

    # Baseline recorded (its path comes from [tool.ts2export]).
    code, out, err = run_cli("baseline", "--no-progress", ".", cwd=repo)
    assert code == 0, err
    assert "Recorded 5 findings in ts2export-baseline.json" in out
    recorded = json.loads((repo / "ts2export-baseline.json").read_text())
    assert sorted((e["path"], e["rule"]) for e in recorded["findings"]) == [
        ("pkg/export.py", "TSX101"), ("pkg/export.py", "TSX301"), ("pkg/export.py", "TSX303"),
        ("tools/serve.py", "TSX304"), ("tools/serve.py", "TSX604")]
    code, out, err = run_cli("check", "--no-progress", ".", cwd=repo)
    assert code == 0, out + err
    assert "5 known findings not shown, 0 new" in out
    commit(repo, "baseline")

    # A new torch.jit.trace -> exit 1, naming only it.
    (repo / "pkg" / "clean.py").write_text(CLEAN + "\n\ndef trace(m, x):\n    return torch.jit.trace(m, x)\n")
    code, out, err = run_cli("check", "--no-progress", ".", cwd=repo)
    assert code == 1
    assert [line.split(" ")[0:2] for line in finding_lines(out)] == [["pkg/clean.py:9:12:", "TSX301"]]
    git(repo, "checkout", "--", "pkg/clean.py")

    # A docstring (and a comment, and reformatting) above and inside old findings -> still exit 0.
    edited = '"""Export helpers.\n\nA docstring that shifts every line.\n"""\n' + EXPORT.replace(
        "torch.jit.trace(model, x)", "torch.jit.trace( model,\n        x )  # still traced")
    (repo / "pkg" / "export.py").write_text(edited)
    code, out, err = run_cli("check", "--no-progress", ".", cwd=repo)
    assert code == 0, out + err
    assert finding_lines(out) == []
    assert "gone" not in out

    # An old finding removed -> reported as gone (exit still 0), nothing written without being asked.
    (repo / "tools" / "serve.py").write_text(SERVE.replace('torch.jit.set_fusion_strategy([("STATIC", 2)])\n', ""))
    before = (repo / "ts2export-baseline.json").read_bytes()
    code, out, err = run_cli("check", "--no-progress", ".", cwd=repo)
    assert code == 0, out + err
    assert "1 baseline entry is gone" in out
    assert "tools/serve.py:4: TSX604 torch.jit.set_fusion_strategy([(\"STATIC\",2)]) (gone)" in out
    assert (repo / "ts2export-baseline.json").read_bytes() == before
    commit(repo, "docstring; fusion knob removed")

    # --diff-base HEAD~1 checks only the changed files: export.py and serve.py, not clean.py.
    code, out, err = run_cli("check", "--no-progress", "--no-baseline", "--diff-base", "HEAD~1", "--format", "json", ".", cwd=repo)
    assert code == 1
    report = json.loads(out)
    assert sorted({f["path"] for f in report["findings"]}) == ["pkg/export.py", "tools/serve.py"]
    assert report["summary"]["files"] == 2
    assert "Checked 2 files changed against HEAD~1." in err
    # ...and with the baseline, the changed files are clean but for the gone entry.
    code, out, err = run_cli("check", "--no-progress", "--diff-base", "HEAD~1", ".", cwd=repo)
    assert code == 0, out + err
    assert "TSX604" in out and "gone" in out

    # --update-baseline drops the gone entry and never adds a new finding.
    (repo / "pkg" / "clean.py").write_text(CLEAN + "\n\ndef trace(m, x):\n    return torch.jit.trace(m, x)\n")
    code, out, err = run_cli("check", "--no-progress", "--update-baseline", ".", cwd=repo)
    assert code == 1
    assert "dropped 1 gone entry" in out
    entries = json.loads((repo / "ts2export-baseline.json").read_text())["findings"]
    assert sorted((e["path"], e["rule"]) for e in entries) == [
        ("pkg/export.py", "TSX101"), ("pkg/export.py", "TSX301"), ("pkg/export.py", "TSX303"), ("tools/serve.py", "TSX304")]
    # Adding the new one takes `ts2export baseline`.
    code, out, err = run_cli("baseline", "--no-progress", ".", cwd=repo)
    assert code == 0 and "Recorded 5 findings" in out
    code, out, err = run_cli("check", "--no-progress", ".", cwd=repo)
    assert code == 0, out + err


def test_diff_base_adds_readers_of_a_changed_writer(tmp_path, run_cli):
    repo = sample_repo(tmp_path)
    (repo / "pkg" / "export.py").write_text(EXPORT + "\n# touched\n")
    commit(repo, "writer changed")
    code, out, err = run_cli("check", "--no-progress", "--no-baseline", "--diff-base", "HEAD~1", ".", cwd=repo)
    assert code == 1
    paths = {line.split(":")[0] for line in finding_lines(out)}
    assert paths == {"pkg/export.py", "tools/serve.py"}  # serve.py reads the model.pt export.py writes
    assert "Checked 1 file changed against HEAD~1 and 1 file reading an artifact they write." in out
    # Its finding is the one a full run reports (the writer in another file is taken into account).
    _, full, _ = run_cli("check", "--no-progress", "--no-baseline", ".", cwd=repo)
    assert [line for line in finding_lines(full) if line.startswith("tools/serve.py:3")] == \
        [line for line in finding_lines(out) if line.startswith("tools/serve.py:3")]
    # A reader that changed alone brings no writer into the report (but is checked against it).
    (repo / "tools" / "serve.py").write_text(SERVE + "\nx = 1\n")
    commit(repo, "reader changed")
    code, out, err = run_cli("check", "--no-progress", "--no-baseline", "--diff-base", "HEAD~1", ".", cwd=repo)
    assert {line.split(":")[0] for line in finding_lines(out)} == {"tools/serve.py"}
    assert [line for line in finding_lines(full) if line.startswith("tools/serve.py:3")] == \
        [line for line in finding_lines(out) if line.startswith("tools/serve.py:3")]


def test_diff_base_counts_untracked_files_and_honours_paths_and_excludes(tmp_path, run_cli):
    repo = sample_repo(tmp_path)
    (repo / "pkg" / "new.py").write_text("import torch\nf = torch.jit.script(lambda x: x)\n")  # untracked
    (repo / "tools" / "new.py").write_text("import torch\ng = torch.jit.script(lambda x: x)\n")
    (repo / ".gitignore").write_text("ignored.py\n")
    (repo / "pkg" / "ignored.py").write_text("import torch\nh = torch.jit.script(lambda x: x)\n")
    code, out, err = run_cli("check", "--no-progress", "--no-baseline", "--diff-base", "HEAD", "pkg", cwd=repo)
    assert code == 1
    assert {line.split(":")[0] for line in finding_lines(out)} == {"pkg/new.py"}
    code, out, err = run_cli("check", "--no-progress", "--no-baseline", "--diff-base", "HEAD", "pkg/export.py", cwd=repo)
    assert code == 0 and "Checked 0 files changed against HEAD." in out


def test_diff_base_errors_are_one_line(tmp_path, run_cli):
    plain = tmp_path / "plain"
    plain.mkdir()
    (plain / "a.py").write_text(CLEAN)
    code, out, err = run_cli("check", "--diff-base", "HEAD", ".", cwd=plain)
    assert code == 2
    assert err.strip().splitlines() == [f"error: --diff-base: {plain.resolve()} is not inside a git repository"]
    repo = sample_repo(tmp_path / "repo")
    code, out, err = run_cli("check", "--no-baseline", "--diff-base", "no-such-branch", ".", cwd=repo)
    assert code == 2
    assert len(err.strip().splitlines()) == 1 and "'no-such-branch' is not a commit" in err


def test_baseline_errors_are_one_line(tmp_path, run_cli):
    repo = sample_repo(tmp_path)
    code, out, err = run_cli("check", ".", cwd=repo)  # configured, not recorded yet
    assert code == 2
    assert err.strip().splitlines() == [
        "error: ts2export-baseline.json: no such baseline file (record one with `ts2export baseline PATH... -o ts2export-baseline.json`)"]
    (repo / "broken.json").write_text("{not json")
    code, out, err = run_cli("check", "--baseline", "broken.json", ".", cwd=repo)
    assert code == 2 and "broken.json: not a ts2export baseline (invalid JSON" in err
    (repo / "other.json").write_text('{"version": 2}')
    code, out, err = run_cli("check", "--baseline", "other.json", ".", cwd=repo)
    assert code == 2 and "other.json: not a ts2export baseline" in err
    code, out, err = run_cli("check", "--no-baseline", "--update-baseline", ".", cwd=repo)
    assert code == 2 and "--update-baseline needs --baseline FILE" in err
    code, out, err = run_cli("baseline", "-o", "broken.json", ".", cwd=repo)
    assert code == 2 and "remove it or choose another --output" in err
    (repo / "pyproject.toml").write_text(CONFIG.replace('"ts2export-baseline.json"', "3"))
    code, out, err = run_cli("check", ".", cwd=repo)
    assert code == 2 and "[tool.ts2export] baseline must be a file name" in err


def test_baseline_of_a_subset_keeps_the_rest_and_scopes_gone_entries(tmp_path, run_cli):
    repo = sample_repo(tmp_path)
    assert run_cli("baseline", "--no-progress", ".", cwd=repo)[0] == 0
    # A file that no longer parses neither loses its entries nor reports them gone.
    (repo / "tools" / "serve.py").write_text("import torch\nmodel = torch.jit.load(\n")
    code, out, err = run_cli("check", "--no-progress", "--update-baseline", ".", cwd=repo)
    assert code == 2 and "tools/serve.py: error: syntax error" in err
    assert "dropped 0 gone entries" in out and " is gone" not in out and " are gone" not in out
    assert len(json.loads((repo / "ts2export-baseline.json").read_text())["findings"]) == 5
    (repo / "tools" / "serve.py").write_text(SERVE)
    # Checking only pkg/ says nothing about tools/ entries; re-recording pkg/ keeps them.
    (repo / "pkg" / "export.py").write_text(EXPORT.replace("    @torch.jit.unused\n", ""))
    code, out, err = run_cli("check", "--no-progress", "pkg", cwd=repo)
    assert code == 0 and "1 baseline entry is gone" in out and "TSX101" in out and "tools/" not in out
    code, out, err = run_cli("baseline", "--no-progress", "pkg", cwd=repo)
    assert code == 0 and "Recorded 4 findings" in out and "2 of them outside the paths or rules of this run" in out
    # Rules not selected are out of scope too.
    code, out, err = run_cli("check", "--no-progress", "--select", "TSX3", ".", cwd=repo)
    assert code == 0 and "gone" not in out


def test_identical_constructs_are_counted(tmp_path, run_cli):
    repo = sample_repo(tmp_path)
    twice = "import torch\n\na = torch.jit.script(lambda x: x)\nb = torch.jit.script(lambda x: x)\n"
    (repo / "pkg" / "twice.py").write_text(twice)
    assert run_cli("baseline", "--no-progress", ".", cwd=repo)[0] == 0
    entries = [e for e in json.loads((repo / "ts2export-baseline.json").read_text())["findings"] if e["path"] == "pkg/twice.py"]
    assert sorted(e["occurrence"] for e in entries) == [0, 1]
    (repo / "pkg" / "twice.py").write_text(twice + "c = torch.jit.script(lambda x: x)\n")
    code, out, err = run_cli("check", "--no-progress", ".", cwd=repo)
    assert code == 1 and len(finding_lines(out)) == 1
    (repo / "pkg" / "twice.py").write_text("import torch\n\na = torch.jit.script(lambda x: x)\n")
    code, out, err = run_cli("check", "--no-progress", ".", cwd=repo)
    assert code == 0 and "1 baseline entry is gone" in out


@pytest.mark.parametrize("fmt", ["json", "sarif", "github"])
def test_machine_formats_carry_only_new_findings(tmp_path, run_cli, fmt):
    repo = sample_repo(tmp_path)
    assert run_cli("baseline", "--no-progress", ".", cwd=repo)[0] == 0
    (repo / "pkg" / "clean.py").write_text(CLEAN + "y = torch.jit.script(double)\n")
    code, out, err = run_cli("check", "--no-progress", "--format", fmt, ".", cwd=repo)
    assert code == 1
    assert "5 known findings not shown, 1 new" in err  # notes go to stderr: stdout stays machine-readable
    if fmt == "json":
        assert [f["path"] for f in json.loads(out)["findings"]] == ["pkg/clean.py"]
    elif fmt == "sarif":
        results = json.loads(out)["runs"][0]["results"]
        assert [r["locations"][0]["physicalLocation"]["artifactLocation"]["uri"] for r in results] == ["pkg/clean.py"]
    else:
        assert out.count("::warning") == 1 and "file=pkg/clean.py" in out
