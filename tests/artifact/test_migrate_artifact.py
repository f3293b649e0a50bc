"""migrate-artifact: the whole chain with a markdown and JSON report."""

import json

import pytest

pytestmark = pytest.mark.slow  # lowers models


def test_chain_writes_reports_with_every_figure(artifacts, cli, tmp_path):
    out = tmp_path / "run"
    code, stdout, err = cli(
        "migrate-artifact", artifacts.torchscript("dict_tuple_outputs"), "-i", "float32[B=1..16,12]", "--out", out
    )
    assert code == 0, stdout + err
    steps = [line.split(":")[0] for line in stdout.splitlines()[:4]]
    assert steps == ["convert", "verify .pt2", "lower", "verify .pte"]
    stem = artifacts.torchscript("dict_tuple_outputs").stem
    assert (out / f"{stem}.pt2").is_file() and (out / f"{stem}.pte").is_file()
    report = json.loads((out / "report.json").read_text())
    assert report["status"] == "pass" and report["error"] is None
    assert [s["result"] for s in report["steps"]] == ["ok", "pass", "ok", "pass"]
    assert report["convert"]["methods"][0]["strategy"] == "TS2EPConverter"
    assert report["verify_pt2"]["comparisons"] == 4 and report["verify_pte"]["comparisons"] == 4
    assert report["lower"]["size_bytes"] == (out / f"{stem}.pte").stat().st_size
    assert 0 < report["lower"]["methods"][0]["share"] <= 1
    md = (out / "report.md").read_text()
    for heading in ("## Convert", "## Verify: TorchScript vs .pt2", "## Lower", "## Verify: TorchScript vs .pte"):
        assert heading in md
    assert "Status: **pass**" in md and "| verify .pte | pass |" in md


def test_chain_stops_at_the_first_error_and_still_reports(artifacts, cli, tmp_path):
    out = tmp_path / "run"
    code, stdout, err = cli("migrate-artifact", artifacts.torchscript("small_cnn"), "--out", out)
    assert code == 2
    assert err.startswith("error: convert: forward: a saved TorchScript file keeps no input shapes")
    report = json.loads((out / "report.json").read_text())
    assert report["status"] == "error" and [s["step"] for s in report["steps"]] == ["convert"]


def test_chain_without_lowering_and_with_reference(artifacts, cli, tmp_path):
    from .conftest import CORPUS

    out = tmp_path / "run"
    code, stdout, err = cli(
        "migrate-artifact", artifacts.torchscript("branchy"), "-i", "float32[2,8]", "--out", out, "--no-lower",
        "--reference", f"{CORPUS / 'branchy.py'}:build",
    )
    assert code == 1, stdout + err
    report = json.loads((out / "report.json").read_text())
    assert report["status"] == "mismatch" and report["lower"] is None
    assert [s["step"] for s in report["steps"]] == ["convert", "verify .pt2"]
