from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent


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
