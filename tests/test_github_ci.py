"""GitHub Actions: the workflow in docs/ci.md and the composite action (action.yml) run their exact
`run:` steps (bash, as GitHub runs them) against a sample pull request. Steps that `uses:` another
action, and the install steps (they download torch), are the only ones not run."""

import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from tests.test_ci_gate import CLEAN, commit, git, sample_repo

ROOT = Path(__file__).resolve().parent.parent


def workflow_from_docs() -> dict:
    text = (ROOT / "docs" / "ci.md").read_text()
    section = text.split("### A workflow", 1)[1]
    block = re.search(r"```yaml\n(.*?)```", section, re.S).group(1)
    return yaml.safe_load(block)


def substitute(text: str, values: dict) -> str:
    """GitHub's ${{ expr }} for the expressions the workflow and the action use."""
    def one(m: re.Match) -> str:
        expr = m.group(1).strip()
        assert expr in values, f"unexpected expression {expr!r}"
        return values[expr]
    return re.sub(r"\$\{\{(.*?)\}\}", one, str(text))


def condition(expr: str | None, values: dict) -> bool:
    """Evaluate an `if:` of the forms the action uses (inputs.x == 'v', != '', &&)."""
    if not expr:
        return True
    parts = []
    for clause in expr.split("&&"):
        m = re.fullmatch(r"\s*([\w.-]+)\s*(==|!=)\s*'([^']*)'\s*", clause)
        assert m, f"unexpected condition {clause!r}"
        value = values[m.group(1)]
        parts.append((value == m.group(3)) if m.group(2) == "==" else (value != m.group(3)))
    return all(parts)


def run_step(step: dict, repo: Path, values: dict, summary: Path, extra_env: dict | None = None) -> subprocess.CompletedProcess:
    env = dict(os.environ)
    env.pop("CI", None)
    env.update({"PATH": f"{Path(sys.executable).parent}{os.pathsep}{env['PATH']}", "GITHUB_STEP_SUMMARY": str(summary)})
    env.update(extra_env or {})
    env.update({k: substitute(v, values) for k, v in (step.get("env") or {}).items()})
    script = substitute(step["run"], values)
    # GitHub runs `run:` with `bash --noprofile --norc -eo pipefail {0}`.
    return subprocess.run(["bash", "--noprofile", "--norc", "-eo", "pipefail", "-c", script], cwd=repo, env=env,
                          capture_output=True, text=True, timeout=600)


def pull_request(tmp_path: Path, run_cli) -> tuple[Path, str]:
    """A repository with a baseline on main, and a branch that adds new TorchScript."""
    repo = sample_repo(tmp_path / "repo")
    assert run_cli("baseline", "--no-progress", ".", cwd=repo)[0] == 0
    commit(repo, "baseline")
    base = git(repo, "rev-parse", "HEAD").strip()
    (repo / "pkg" / "clean.py").write_text(CLEAN + "\n\ndef trace(m, x):\n    return torch.jit.trace(m, x)\n")
    commit(repo, "new torchscript")
    return repo, base


def sarif_paths(path: Path) -> list[str]:
    doc = json.loads(path.read_text())
    return sorted(r["locations"][0]["physicalLocation"]["artifactLocation"]["uri"] for r in doc["runs"][0]["results"])


@pytest.mark.slow
def test_docs_workflow_commands(tmp_path, run_cli):
    repo, base = pull_request(tmp_path, run_cli)
    workflow = workflow_from_docs()
    steps = workflow["jobs"]["torchscript"]["steps"]
    assert workflow["permissions"]["security-events"] == "write"
    summary = tmp_path / "summary.md"
    values = {"github.event.pull_request.base.sha": base}
    ran = {}
    for step in steps:
        if "uses" in step:
            continue
        if "pip install" in step["run"]:
            assert step["name"] == "Install ts2export"
            continue
        ran[step["name"]] = run_step(step, repo, values, summary)
    sarif, report, gate = ran.values()
    assert list(ran) == ["SARIF for code scanning (every finding, every file)", "Migration report in the job summary",
                         "No new TorchScript (annotations on the pull request)"]
    assert sarif.returncode == 0, sarif.stderr
    assert sarif_paths(repo / "ts2export.sarif") == ["pkg/clean.py", "pkg/export.py", "pkg/export.py", "pkg/export.py",
                                                     "tools/serve.py", "tools/serve.py"]
    upload = next(s for s in steps if s.get("uses", "").startswith("github/codeql-action/upload-sarif"))
    assert upload["with"]["sarif_file"] == "ts2export.sarif"
    assert report.returncode == 0, report.stderr
    assert summary.read_text().startswith("## TorchScript migration report")
    assert "**1 new**" in summary.read_text()
    assert gate.returncode == 1
    assert gate.stdout.splitlines() and all(line.startswith("::warning file=pkg/clean.py,") for line in gate.stdout.splitlines())
    assert "Checked 1 file changed against" in gate.stderr
    # On a push (no pull request base) the same step checks every file, and the baseline keeps it green.
    git(repo, "checkout", "-q", base)
    push = run_step(steps[-1], repo, {"github.event.pull_request.base.sha": ""}, summary)
    assert push.returncode == 0 and push.stdout == "", push.stderr


@pytest.mark.slow
def test_composite_action_commands(tmp_path, run_cli):
    repo, base = pull_request(tmp_path, run_cli)
    action = yaml.safe_load((ROOT / "action.yml").read_text())
    assert action["runs"]["using"] == "composite"
    inputs = {f"inputs.{k}": v.get("default", "") for k, v in action["inputs"].items()}
    inputs.update({"inputs.diff-base": base, "inputs.upload-sarif": "true", "inputs.install": "false"})
    summary = tmp_path / "summary.md"
    outcome = {}
    for step in action["runs"]["steps"]:
        if not condition(step.get("if"), inputs):
            outcome[step["name"]] = "skipped"
            continue
        if "uses" in step:
            assert step["uses"].startswith("github/codeql-action/upload-sarif@")
            assert substitute(step["with"]["sarif_file"], inputs) == "ts2export.sarif"
            outcome[step["name"]] = "uses"
            continue
        assert step["shell"] == "bash"
        outcome[step["name"]] = run_step(step, repo, inputs, summary, {"GITHUB_ACTION_PATH": str(ROOT)})
    assert outcome["Install ts2export"] == "skipped" and outcome["Upload SARIF"] == "uses"
    sarif = outcome["ts2export SARIF (every finding)"]
    assert sarif.returncode == 0, sarif.stderr
    assert len(sarif_paths(repo / "ts2export.sarif")) == 6
    report = outcome["ts2export report (job summary)"]
    assert report.returncode == 0, report.stderr
    assert "Progress against the baseline" in summary.read_text()
    gate = outcome["ts2export check (annotations; fails on new TorchScript)"]
    assert gate.returncode == 1
    assert [line.split(",")[0] for line in gate.stdout.splitlines()] == ["::warning file=pkg/clean.py"]
    # Explicit baseline and paths with the inputs as a user writes them; nothing new -> green.
    git(repo, "checkout", "-q", base)
    inputs.update({"inputs.paths": "pkg tools", "inputs.baseline": "ts2export-baseline.json", "inputs.diff-base": ""})
    gate_step = action["runs"]["steps"][-1]
    green = run_step(gate_step, repo, inputs, summary)
    assert green.returncode == 0 and green.stdout == "", green.stderr
    assert "5 known findings not shown, 0 new" in green.stderr
