"""The pre-commit hooks (.pre-commit-hooks.yaml), run by the `pre-commit` package on a sample repository.

Two ways in: `repo: local` hooks with `language: system` built from the shipped hook definitions (fast;
ts2export comes from this environment), and the shipped hooks installed from a local clone of this
repository with `language: python` (what users get; pre-commit pip-installs ts2export's core, without torch, into its
own environment, so that test is slow)."""

import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from ts2export.engine.discovery import CPP_SUFFIXES, NOTEBOOK_SUFFIXES, PYTHON_SUFFIXES

ROOT = Path(__file__).resolve().parent.parent
HOOKS = yaml.safe_load((ROOT / ".pre-commit-hooks.yaml").read_text())
LEGACY = '''import torch


def export(model: torch.nn.Module, x):
    return torch.jit.trace(model, x)
'''
UNUSED = '''import torch


class Net(torch.nn.Module):
    @torch.jit.unused
    def debug(self, x):
        return x
'''


def env_for(tmp_path: Path) -> dict:
    env = dict(os.environ)
    env.update({
        "PRE_COMMIT_HOME": str(tmp_path / "pre-commit-home"),
        "PATH": f"{Path(sys.executable).parent}{os.pathsep}{env.get('PATH', '')}",
        "PIP_CONSTRAINT": str(ROOT / "constraints.txt"),  # torch stays the pinned CPU build
        "PIP_NO_COMPILE": "1",  # no .pyc for torch's thousands of files: a much faster install
        "PIP_DISABLE_PIP_VERSION_CHECK": "1",
        "VIRTUALENV_NO_PERIODIC_UPDATE": "1",
        "GIT_AUTHOR_NAME": "t", "GIT_AUTHOR_EMAIL": "t@example.com",
        "GIT_COMMITTER_NAME": "t", "GIT_COMMITTER_EMAIL": "t@example.com",
    })
    env.pop("CI", None)
    return env


def sh(cwd: Path, env: dict, *args: str, check: bool = True, timeout: int = 300) -> subprocess.CompletedProcess:
    proc = subprocess.run(list(args), cwd=cwd, env=env, capture_output=True, text=True, timeout=timeout)
    if check and proc.returncode != 0:
        raise AssertionError(f"{args} exited {proc.returncode}:\n{proc.stdout}\n{proc.stderr}")
    return proc


def pre_commit(*args: str) -> list[str]:
    return [sys.executable, "-m", "pre_commit", *args]


def sample_repo(root: Path, env: dict, config: str) -> Path:
    root.mkdir()
    sh(root, env, "git", "init", "-q")
    (root / ".pre-commit-config.yaml").write_text(config)
    (root / "pyproject.toml").write_text('[project]\nname = "sample"\n\n[tool.ts2export]\nbaseline = "ts2export-baseline.json"\n')
    (root / "legacy.py").write_text(LEGACY)
    (root / "clean.py").write_text("def double(x):\n    return x * 2\n")
    (root / "README.md").write_text("torch.jit.trace is not checked in markdown\n")
    sh(root, env, sys.executable, "-m", "ts2export", "baseline", "--no-progress", ".")
    sh(root, env, "git", "add", "-A")
    sh(root, env, "git", "commit", "-q", "--no-verify", "-m", "sample with a baseline")
    return root


def exercise_hooks(repo: Path, env: dict) -> None:
    """Commit through the installed hooks: what passes, what fails and why."""
    sh(repo, env, *pre_commit("install"))

    # An edit of a legacy file whose TorchScript is in the baseline, and a clean file: the commit goes through.
    (repo / "legacy.py").write_text('"""Legacy export."""\n' + LEGACY)
    (repo / "clean.py").write_text("def double(x):\n    return 2 * x\n")
    (repo / "README.md").write_text("torch.jit.script, still not checked\n")
    sh(repo, env, "git", "add", "-A")
    ok = sh(repo, env, "git", "commit", "-q", "-m", "edit", check=False, timeout=900)
    assert ok.returncode == 0, ok.stdout + ok.stderr
    assert re.search(r"ts2export check \(no new TorchScript\)\.+Passed", ok.stdout + ok.stderr)

    # New TorchScript: the check hook fails, naming it, and the commit is refused.
    (repo / "new.py").write_text("import torch\n\nscripted = torch.jit.script(lambda x: x)\n")
    sh(repo, env, "git", "add", "new.py")
    refused = sh(repo, env, "git", "commit", "-q", "-m", "new torchscript", check=False, timeout=900)
    out = refused.stdout + refused.stderr
    assert refused.returncode != 0
    assert re.search(r"ts2export check \(no new TorchScript\)\.+Failed", out)
    assert "new.py:3:12: TSX" in out and "legacy.py" not in out
    assert sh(repo, env, "git", "rev-list", "--count", "HEAD").stdout.strip() == "2"
    sh(repo, env, "git", "rm", "-q", "--cached", "new.py")
    (repo / "new.py").unlink()

    # A safe fix: the apply hook writes it (the hook fails: it changed a file), then the commit goes through.
    (repo / "net.py").write_text(UNUSED)
    sh(repo, env, "git", "add", "net.py")
    fixed = sh(repo, env, "git", "commit", "-q", "-m", "net", check=False, timeout=900)
    out = fixed.stdout + fixed.stderr
    assert fixed.returncode != 0
    assert re.search(r"ts2export apply \(safe fixes\)\.+Failed", out) and "files were modified by this hook" in out
    assert "torch.jit" not in (repo / "net.py").read_text()
    sh(repo, env, "git", "add", "net.py")
    again = sh(repo, env, "git", "commit", "-q", "-m", "net", check=False, timeout=900)
    assert again.returncode == 0, again.stdout + again.stderr


def test_hook_files_pattern_matches_what_ts2export_checks():
    check, apply_ = (next(h for h in HOOKS if h["id"] == i) for i in ("ts2export-check", "ts2export-apply"))
    suffixes = sorted(PYTHON_SUFFIXES | NOTEBOOK_SUFFIXES | CPP_SUFFIXES)
    assert [s for s in suffixes if re.search(check["files"], "a" + s)] == suffixes
    assert [s for s in suffixes if re.search(apply_["files"], "a" + s.upper())] == sorted(PYTHON_SUFFIXES | NOTEBOOK_SUFFIXES)
    assert not re.search(check["files"], "a.c") and not re.search(check["files"], "a.md")


@pytest.mark.slow
def test_shipped_hooks_as_local_system_hooks(tmp_path):
    env = env_for(tmp_path)
    local = [{**hook, "language": "system"} for hook in HOOKS]
    config = yaml.safe_dump({"repos": [{"repo": "local", "hooks": local}]}, sort_keys=False)
    exercise_hooks(sample_repo(tmp_path / "sample", env, config), env)


def hook_repository(dest: Path, env: dict) -> str:
    """A local clone of this repository's working tree (what a user's `repo:` points at); its commit."""
    ignore = shutil.ignore_patterns("__pycache__", "*.egg-info", ".venv", "test-artifacts")
    for name in ("pyproject.toml", "README.md", "constraints.txt", ".pre-commit-hooks.yaml"):
        dest.mkdir(exist_ok=True)
        shutil.copy2(ROOT / name, dest / name)
    for folder in ("migrate", "rules"):
        shutil.copytree(ROOT / folder, dest / folder, ignore=ignore)
    sh(dest, env, "git", "init", "-q")
    sh(dest, env, "git", "add", "-A")
    sh(dest, env, "git", "commit", "-q", "-m", "ts2export hooks")
    return sh(dest, env, "git", "rev-parse", "HEAD").stdout.strip()


@pytest.mark.slow
def test_shipped_hooks_installed_from_a_local_clone(tmp_path):
    env = env_for(tmp_path)
    clone = tmp_path / "ts2export-clone"
    rev = hook_repository(clone, env)
    config = yaml.safe_dump({"repos": [{"repo": str(clone), "rev": rev,
                                        "hooks": [{"id": "ts2export-check"}, {"id": "ts2export-apply"}]}]}, sort_keys=False)
    repo = sample_repo(tmp_path / "sample", env, config)
    # pre-commit pip-installs ts2export's core (no torch) into its own environment.
    installed = sh(repo, env, *pre_commit("install-hooks"), check=False, timeout=1500)
    assert installed.returncode == 0, installed.stdout[-3000:] + installed.stderr[-3000:]
    exercise_hooks(repo, env)
