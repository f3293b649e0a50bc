import os
import time
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent


@pytest.fixture(autouse=True)
def _cache_outside_the_tree(tmp_path_factory, monkeypatch):
    """Each test's result cache (ts2export.engine.cache) in a folder of its own, not in the trees it checks."""
    monkeypatch.setenv("TS2EXPORT_CACHE_DIR", str(tmp_path_factory.mktemp("ts2export_cache")))
    monkeypatch.delenv("TS2EXPORT_NO_CACHE", raising=False)


@pytest.fixture(scope="session", autouse=True)
def _program_outputs_shared(tmp_path_factory):
    """The corpus programs' outputs, kept for the session (ts2export.harness.corpus.run_program):
    the original program of a case runs once, not once per test that compares against it. With
    pytest-xdist the workers share the folder (each writes a whole file or none)."""
    from ts2export.harness.corpus import OUTPUTS_CACHE_ENV

    base = tmp_path_factory.getbasetemp()
    root = base.parent if os.environ.get("PYTEST_XDIST_WORKER") else base
    folder = root / "ts2export-program-outputs"
    folder.mkdir(exist_ok=True)
    saved = os.environ.get(OUTPUTS_CACHE_ENV)
    os.environ[OUTPUTS_CACHE_ENV] = str(folder)
    yield folder
    if saved is None:
        os.environ.pop(OUTPUTS_CACHE_ENV, None)
    else:
        os.environ[OUTPUTS_CACHE_ENV] = saved


@pytest.fixture
def run_cli(monkeypatch):
    """Run the CLI in-process: returns (exit code, stdout, stderr)."""
    from typer.testing import CliRunner

    from ts2export.cli import app

    def _run(*args, cwd=None):
        if cwd is not None:
            monkeypatch.chdir(cwd)
        result = CliRunner().invoke(app, [str(a) for a in args], catch_exceptions=False)
        return result.exit_code, result.stdout, result.stderr

    return _run


# Files a test leaves for people to look at (e.g. the report's screenshot); CI keeps the folder.
ARTIFACTS = Path(os.environ.get("TS2EXPORT_TEST_ARTIFACTS", ROOT / "test-artifacts"))


@pytest.fixture
def artifact_dir(request) -> Path:
    """A folder under ``ARTIFACTS`` for this test, emptied first; its path is printed after the run."""
    import re
    import shutil

    folder = ARTIFACTS / re.sub(r"[^A-Za-z0-9_.-]+", "_", request.node.name)
    shutil.rmtree(folder, ignore_errors=True)
    folder.mkdir(parents=True)
    return folder


def pytest_sessionstart(session):
    session.config._ts2export_started = time.time()


def pytest_terminal_summary(terminalreporter, exitstatus, config):
    started = getattr(config, "_ts2export_started", None)
    if started is None or not ARTIFACTS.is_dir():
        return
    fresh = sorted(p for p in ARTIFACTS.rglob("*") if p.is_file() and p.stat().st_mtime >= started)
    if fresh:
        terminalreporter.write_line(f"test artifacts ({len(fresh)} files) in {ARTIFACTS}:")
        for p in fresh:
            terminalreporter.write_line(f"  {p.relative_to(ARTIFACTS)}")
