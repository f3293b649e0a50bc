"""The core installs without torch (`pip install ts2export`): the static commands, the pre-commit hooks
and the GitHub action read source files and never import torch; a command that needs torch says
which extra to install, in one line, and exits 2. Run in an interpreter where torch cannot be
imported (a fresh venv with the core alone was measured by hand: docs/usage.md#installing)."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent

PROBE = textwrap.dedent('''
    import contextlib, io, json, sys

    for name in ("torch", "executorch"):  # as if not installed: import fails, find_spec says None
        sys.modules[name] = None
    from ts2export.cli import main

    results = {}
    for args in json.loads(sys.argv[1]):
        out, err = io.StringIO(), io.StringIO()
        sys.argv = ["ts2export", *args]
        code = 0
        with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
            try:
                main()
            except SystemExit as exc:
                code = exc.code or 0
        results[" ".join(args[:1])] = [code, out.getvalue(), err.getvalue()]
    results["torch imported"] = sys.modules.get("torch") is not None or any(m.startswith("torch.") for m in sys.modules)
    print(json.dumps(results))
''')


def test_the_static_commands_run_without_torch_and_the_others_name_their_extra(tmp_path):
    tree = tmp_path / "proj"
    shutil.copytree(ROOT / "corpus" / "callsites" / "deploy_and_serve" / "before", tree)
    commands = [
        ["check", "--no-progress", "--no-cache", str(tree)],
        ["scan", "--no-progress", "--unsafe-fixes", str(tree)],
        ["diff", "--no-progress", "--unsafe-fixes", str(tree)],
        ["report", "--no-progress", "-o", str(tmp_path / "report.html"), str(tree)],
        ["apply", "--no-progress", "--unsafe-fixes", str(tree)],
        ["convert", str(tmp_path / "model.pt"), "-o", str(tmp_path / "model.pt2")],
        ["verify", str(tmp_path / "model.pt"), str(tmp_path / "model.pt2")],
        ["migrate-artifact", str(tmp_path), "--out", str(tmp_path / "out")],
    ]
    done = subprocess.run([sys.executable, "-c", PROBE, json.dumps(commands)], capture_output=True, text=True,
                          timeout=600, cwd=tmp_path)
    assert done.returncode == 0, done.stderr[-3000:]
    results = json.loads(done.stdout.strip().splitlines()[-1])
    assert results.pop("torch imported") is False
    check, scan, diff, report, apply = (results[c] for c in ("check", "scan", "diff", "report", "apply"))
    assert check[0] == 1 and "TSX301" in check[1]
    assert scan[0] == 0 and "TSX304" in scan[1]  # scan reports; check is the gate
    assert diff[0] == 1 and "+    traced = torch.export.export(model" in diff[1]
    assert report[0] == 0 and (tmp_path / "report.html").read_text().startswith("<!DOCTYPE html>")
    assert apply[0] in (0, 1) and "torch.export.save(traced" in (tree / "deploy.py").read_text()
    for command in ("convert", "verify", "migrate-artifact"):
        code, out, err = results[command]
        assert code == 2 and out == ""
        assert err == (f"error: `ts2export {command}` needs torch, which this install does not have: "
                       "pip install 'ts2export[torch]'\n")


def test_the_core_dependencies_leave_torch_to_the_extras():
    import tomllib

    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    assert not any(d.startswith(("torch", "executorch", "ray")) for d in project["dependencies"])
    extras = project["optional-dependencies"]
    assert any(d.startswith("torch") for d in extras["torch"])
    assert {"torch", "executorch"} <= {d.split(">")[0].split("=")[0].split("<")[0] for d in extras["edge"]}


SERVER_PROBE = textwrap.dedent('''
    import contextlib, io, json, sys

    sys.modules["torch"] = sys.modules["executorch"] = None
    if sys.argv[1] == "without pygls":
        sys.modules["pygls"] = None
        from ts2export.cli import main

        err = io.StringIO()
        sys.argv = ["ts2export", "server"]
        with contextlib.redirect_stderr(err):
            try:
                main()
            except SystemExit as exc:
                print(json.dumps([exc.code, err.getvalue()]))
    else:  # the server's whole import path, a document checked and fixed: no torch
        from ts2export.server.document import document
        from ts2export.server.lsp import build
        from ts2export.engine.document import check_document, fix_document

        build()
        doc = document(sys.argv[2], "import torch\\ntraced = torch.jit.trace(model, x)\\n")
        found = [f.rule_id for f in check_document(doc.task, doc.options).findings]
        fix_document(doc.task, doc.options, "unsafe")
        torch = sys.modules.get("torch") is not None or any(m.startswith("torch.") for m in sys.modules)
        print(json.dumps([found, torch]))
''')


def test_the_language_server_imports_no_torch_and_names_its_extra(tmp_path):
    pytest.importorskip("pygls")
    done = subprocess.run([sys.executable, "-c", SERVER_PROBE, "with pygls", str(tmp_path / "m.py")],
                          capture_output=True, text=True, timeout=300, cwd=tmp_path)
    assert done.returncode == 0, done.stderr[-3000:]
    found, torch = json.loads(done.stdout.strip().splitlines()[-1])
    assert "TSX301" in found and torch is False
    done = subprocess.run([sys.executable, "-c", SERVER_PROBE, "without pygls"], capture_output=True, text=True,
                          timeout=300, cwd=tmp_path)
    code, err = json.loads(done.stdout.strip().splitlines()[-1])
    assert code == 2 and err == ("error: `ts2export server` needs pygls, which this install does not have: "
                                 "pip install 'ts2export[server]'\n")
