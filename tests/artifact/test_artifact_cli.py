"""register() wiring, lazy imports, and the stand-alone entry point."""

import subprocess
import sys

import pytest
import typer

from ts2export.artifact.cli import register

from .conftest import ROOT


def test_register_adds_the_six_commands():
    app = typer.Typer()
    register(app)
    names = {c.name for c in app.registered_commands}
    assert names == {"convert", "verify", "package", "lower", "migrate-artifact", "merge-reports"}


@pytest.mark.slow
def test_importing_the_cli_module_does_not_import_torch():
    code = "import sys, ts2export.artifact.cli; print('torch' in sys.modules, 'executorch' in sys.modules)"
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=ROOT, timeout=120)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.split() == ["False", "False"]


def test_help_lists_flags(cli):
    code, out, _ = cli("verify", "--help")
    assert code == 0
    for flag in ("--input", "--inputs", "--device", "--samples", "--rtol", "--atol", "--seed", "--format", "--reference", "--isolate", "--timeout"):
        assert flag in out
    code, out, _ = cli("lower", "--help")
    for flag in ("--backend", "--verify", "--bundle", "--output"):
        assert flag in out


def test_bad_format_is_an_error(artifacts, cli):
    code, _, err = cli("verify", artifacts.torchscript("small_cnn"), artifacts.pt2("small_cnn"), "--format", "xml")
    assert code == 2 and err.strip() == "error: --format must be text or json, not 'xml'"


@pytest.mark.slow
def test_module_entry_point(tmp_path):
    proc = subprocess.run(
        [sys.executable, "-m", "ts2export.artifact", "convert", str(tmp_path / "missing.pt"), "-o", str(tmp_path / "x.pt2")],
        capture_output=True, text=True, cwd=ROOT, timeout=120,
    )
    assert proc.returncode == 2
    assert proc.stderr.strip().splitlines()[-1] == f"error: {tmp_path / 'missing.pt'}: no such file"
