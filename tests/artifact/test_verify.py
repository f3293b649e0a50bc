"""verify: corpus models pass, altered programs fail with exit 1, baked branches are caught with
--reference, and every bad input gets one line and exit 2."""

import json
import re
import subprocess
import sys

import jsonschema
import pytest
import torch
from torch.export.pt2_archive._package import package_pt2

from ts2export.artifact.loading import load_pt2

from .conftest import CHAIN_MODELS, CORPUS, ROOT, load_corpus, save_torchscript

REPORT_SCHEMA = {
    "type": "object",
    "required": ["status", "old", "new", "device", "notes", "comparisons", "mismatches", "rows", "seconds"],
    "properties": {
        "status": {"enum": ["pass", "mismatch"]},
        "comparisons": {"type": "integer", "minimum": 1},
        "mismatches": {"type": "integer", "minimum": 0},
        "rows": {
            "type": "array",
            "items": {
                "type": "object",
                "required": ["method", "inputs", "pair", "ok", "output"],
                "properties": {
                    "ok": {"type": "boolean"},
                    "max_abs": {"type": ["number", "null"]},
                    "max_rel": {"type": ["number", "null"]},
                    "pct_out": {"type": ["number", "null"]},
                },
            },
        },
    },
}


@pytest.mark.parametrize("name", CHAIN_MODELS)
def test_corpus_models_verify(artifacts, cli, name):
    code, out, err = cli("verify", artifacts.torchscript(name), artifacts.pt2(name), "--format", "json")
    assert code == 0, out + err
    report = json.loads(out)
    jsonschema.validate(report, REPORT_SCHEMA)
    _, methods = artifacts.specs(name)
    assert {r["method"] for r in report["rows"]} == set(methods or ["forward"])
    # stored example plus min / max / middle samples for each method
    assert report["comparisons"] == 4 * len(methods or ["forward"])
    assert all(r["ok"] for r in report["rows"])


def test_generated_samples_cover_dynamic_dim_range(artifacts, cli):
    code, out, _ = cli("verify", artifacts.torchscript("small_cnn"), artifacts.pt2("small_cnn"), "--samples", "4")
    assert code == 0
    for label in ("example", "min(B=1)", "max(B=8)", "mid(B=4)", "random(B="):
        assert label in out
    assert out.strip().splitlines()[-1].startswith("PASS: 5 comparison(s), 0 mismatch(es) on cpu")


def test_generated_indices_stay_in_the_vocabulary(artifacts):
    from ts2export.artifact.verify import input_sets_for

    programs, meta = load_pt2(artifacts.pt2("embedding_bag"))
    sets = input_sets_for("forward", programs["forward"], meta, (), None, 6, 0)
    for _, (ids,), _ in sets:
        assert ids.dtype == torch.int64 and 0 <= int(ids.min()) and int(ids.max()) <= 999


def _perturbed_program(tmp_path, name="small_cnn"):
    model, example, specs, _ = load_corpus(name)
    with torch.no_grad():
        model.head.weight[0, 0] += 0.5
    b = torch.export.Dim("B", min=1, max=8)
    ep = torch.export.export(model, example, dynamic_shapes=({0: b},))
    path = tmp_path / "perturbed.pt2"
    package_pt2(str(path), exported_programs={"forward": ep})
    return path


def test_altered_program_fails_with_a_readable_table(artifacts, cli, tmp_path):
    bad = _perturbed_program(tmp_path)
    code, out, err = cli("verify", artifacts.torchscript("small_cnn"), bad)
    assert code == 1, err
    lines = out.strip().splitlines()
    header = next(line for line in lines if line.startswith("method"))
    assert header.split() == ["method", "inputs", "pair", "output", "shape", "dtype", "max_abs", "max_rel", "%out", "result"]
    rows = [line for line in lines if line.startswith("forward") and "MISMATCH" in line]
    assert len(rows) == 4  # every input set
    # only column 0 of the head changed: 1 of 10 outputs per row is out of tolerance
    assert all(re.split(r"\s{2,}", line)[8] == "10.00" for line in rows)
    assert lines[-1].startswith("FAIL: 4 comparison(s), 4 mismatch(es)")
    code, out, _ = cli("verify", artifacts.torchscript("small_cnn"), bad, "--format", "json")
    report = json.loads(out)
    assert code == 1 and report["status"] == "mismatch" and report["mismatches"] == 4
    assert all(0.0 < r["max_abs"] and not r["ok"] for r in report["rows"])


def test_loose_tolerances_accept_the_altered_program(artifacts, cli, tmp_path):
    bad = _perturbed_program(tmp_path)
    code, _, err = cli("verify", artifacts.torchscript("small_cnn"), bad, "--rtol", "10", "--atol", "10")
    assert code == 0, err


def test_reference_catches_a_baked_branch(artifacts, cli, tmp_path):
    old, new = artifacts.torchscript("branchy"), artifacts.pt2("branchy")
    code, out, _ = cli("verify", old, new)
    assert code == 0, "old and new agree: both baked the same branch"
    code, out, err = cli("verify", old, new, "--reference", f"{CORPUS / 'branchy.py'}:build")
    assert code == 1, err
    bad = [line for line in out.splitlines() if "MISMATCH" in line]
    assert bad and all("reference vs" in line for line in bad)
    assert out.strip().splitlines()[-1].startswith("FAIL: 12 comparison(s), 8 mismatch(es)")
    # inputs that take the traced branch agree with the eager model
    torch.save((torch.full((2, 8), 3.0),), tmp_path / "hot.pt")
    code, out, err = cli("verify", old, new, "--reference", f"{CORPUS / 'branchy.py'}:build", "--inputs", tmp_path / "hot.pt")
    assert code == 0, out + err


def test_reference_agrees_with_a_correct_conversion(artifacts, cli):
    code, out, err = cli(
        "verify", artifacts.torchscript("small_cnn"), artifacts.pt2("small_cnn"), "--reference", f"{CORPUS / 'small_cnn.py'}:build"
    )
    assert code == 0, out + err
    assert out.count("reference vs new") == 4


def test_user_specs_and_inputs_file(artifacts, cli, tmp_path):
    old, new = artifacts.torchscript("embedding_bag"), artifacts.pt2("embedding_bag")
    code, out, err = cli("verify", old, new, "-i", "int64[B=2..5,7]{0..999}", "--samples", "2")
    assert code == 0, err
    assert "min(B=2)" in out and "max(B=5)" in out
    torch.save((torch.randint(0, 1000, (3, 7)),), tmp_path / "ids.pt")
    code, out, err = cli("verify", old, new, "--inputs", tmp_path / "ids.pt")
    assert code == 0 and "file" in out


@pytest.mark.slow
def test_pte_verifies_against_torchscript(artifacts, cli):
    code, out, err = cli("verify", artifacts.torchscript("small_cnn"), artifacts.pte("small_cnn"), "-i", "float32[B=1..8,3,16,16]")
    assert code == 0, out + err
    assert "PASS: 3 comparison(s)" in out
    code, out, err = cli("verify", artifacts.torchscript("small_cnn"), artifacts.pte("small_cnn"))
    assert code == 2 and "a .pte keeps no input specs" in err
    # the .pte's planned sizes are upper bounds; larger inputs are refused before they run
    for spec, message in [
        ("float32[2,3,16,17]", "dim 3 is 17, the .pte allows at most 16"),
        ("float32[9,3,16,16]", "dim 0 is 9, the .pte allows at most 8"),
    ]:
        code, out, err = cli("verify", artifacts.torchscript("small_cnn"), artifacts.pte("small_cnn"), "-i", spec)
        assert code == 2 and message in err, err
    code, out, err = cli("verify", artifacts.torchscript("small_cnn"), artifacts.pte("small_cnn"), "-i", "float64[2,3,16,16]")
    assert code == 2 and err.startswith("error: old model failed on forward inputs gen0:static: RuntimeError: ")


class NanInNew(torch.nn.Module):
    def forward(self, x):
        return torch.where(x > 0, x, x.sqrt())  # NaN where x < 0


class Plain(torch.nn.Module):
    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return x


def test_nan_outputs_are_a_mismatch(tmp_path, cli):
    old = save_torchscript(Plain(), None, "script", tmp_path / "plain.pt")
    x = torch.randn(4, 4)
    path = tmp_path / "nan.pt2"
    package_pt2(str(path), exported_programs={"forward": torch.export.export(NanInNew(), (x,))})
    # the old model returns x; the new one NaN wherever x < 0
    code, out, _ = cli("verify", old, path, "-i", "float32[4,4]")
    assert code == 1
    assert "NaN at" in out


def test_output_structure_difference(tmp_path, cli):
    class Pair(torch.nn.Module):
        def forward(self, x):
            return x, x + 1

    old = save_torchscript(Plain(), None, "script", tmp_path / "plain.pt")
    path = tmp_path / "pair.pt2"
    package_pt2(str(path), exported_programs={"forward": torch.export.export(Pair(), (torch.randn(2),))})
    code, out, _ = cli("verify", old, path, "--samples", "0")
    assert code == 1 and "output structure differs" in out


def test_bad_inputs_give_one_line_and_exit_2(artifacts, cli, tmp_path):
    old, new = artifacts.torchscript("multi_input_mlp"), artifacts.pt2("multi_input_mlp")
    broken = tmp_path / "broken.pt2"
    broken.write_bytes(new.read_bytes()[:500])
    cases = [
        (("-i", "float32[3,16]"), "expected 2 input tensor(s), got 1"),
        (("-i", "float64[3,16]", "-i", "float64[3,8]"), "dtype float64, the program expects float32"),
        (("-i", "float32[3,16,1]", "-i", "float32[3,8]"), "rank 3"),
        (("-i", "float32[B=1..40,16]", "-i", "float32[B,8]"), "outside its range 1..32"),
        (("--device", "cuda:0"), "is not present"),
        (("--device", "gpu7"), "unknown device"),
        (("--rtol", "0.1"), "--rtol and --atol together"),
        (("--reference", "no_such_module_xyz:build"), "cannot import no_such_module_xyz"),
    ]
    for extra, message in cases:
        code, out, err = cli("verify", old, new, *extra)
        assert code == 2, (extra, out, err)
        assert err.startswith("error: ") and message in err, (extra, err)
        assert len(err.strip().splitlines()) == 1 and "Traceback" not in err
    code, out, err = cli("verify", old, broken)
    assert code == 2 and "not a .pt2 archive" in err
    code, out, err = cli("verify", new, new)
    assert code == 2 and "not TorchScript" in err or "torch.export .pt2 archive" in err
    code, out, err = cli("verify", old, new, "-i", "float32[3]", "--format", "json")
    assert code == 2 and json.loads(out)["status"] == "error"


def test_auto_device_falls_back_to_cpu_and_says_so(artifacts, cli):
    if torch.accelerator.is_available():
        pytest.skip("an accelerator is present; see test_accelerator.py")
    code, out, _ = cli("verify", artifacts.torchscript("small_cnn"), artifacts.pt2("small_cnn"), "--samples", "0")
    assert code == 0 and "note: no accelerator found; running on cpu" in out


@pytest.mark.slow
def test_isolated_verify_times_out(tmp_path, cli):
    class Spin(torch.nn.Module):
        def forward(self, x: torch.Tensor) -> torch.Tensor:
            for _ in range(1000000000):
                x = x + 1
            return x

    old = save_torchscript(Spin(), None, "script", tmp_path / "spin.pt")
    path = tmp_path / "id.pt2"
    package_pt2(str(path), exported_programs={"forward": torch.export.export(Plain(), (torch.randn(2),))})
    code, out, err = cli("verify", old, path, "--isolate", "--timeout", "8")
    assert code == 2
    assert err.strip() == "error: isolated verify timed out after 8 s and was killed"


@pytest.mark.slow
def test_isolated_verify_reports_like_in_process(artifacts):
    cmd = [
        sys.executable, "-c",
        "import sys; from ts2export.artifact.cli import make_app; make_app()(prog_name='ts2export', args=sys.argv[1:])",
        "verify", str(artifacts.torchscript("dict_tuple_outputs")), str(artifacts.pt2("dict_tuple_outputs")),
        "--isolate", "--format", "json",
    ]
    proc = subprocess.run(cmd, capture_output=True, text=True, cwd=ROOT, timeout=300)
    assert proc.returncode == 0, proc.stderr
    report = json.loads(proc.stdout)
    assert report["status"] == "pass"
    assert {r["output"] for r in report["rows"]} == {"[0]['logits']", "[0]['probs']", "[1][0]", "[1][1]"}


@pytest.mark.parametrize("name", CHAIN_MODELS)
def test_corpus_models_with_an_altered_weight_fail(artifacts, cli, tmp_path, name):
    from ts2export.artifact.loading import save_pt2

    programs, meta = load_pt2(artifacts.pt2(name))
    ep = programs["forward"]
    key = next(k for k, v in ep.state_dict.items() if v.dtype == torch.float32 and v.numel() > 1)
    value = ep.state_dict[key].detach() + 0.5
    ep.state_dict[key] = torch.nn.Parameter(value, requires_grad=False) if isinstance(ep.state_dict[key], torch.nn.Parameter) else value
    altered = tmp_path / "altered.pt2"
    save_pt2(altered, programs, meta)
    code, out, err = cli("verify", artifacts.torchscript(name), altered, "--method", "forward")
    assert code == 1, out + err
    assert "MISMATCH" in out and out.strip().splitlines()[-1].startswith("FAIL:")


def test_generated_inputs_follow_the_program_input_structure(tmp_path):
    from ts2export.artifact.verify import input_sets_for

    class KwModel(torch.nn.Module):
        def forward(self, x, *, scale):
            return x * scale

    ep = torch.export.export(KwModel(), (torch.randn(3),), {"scale": torch.randn(3)})
    sets = input_sets_for("forward", ep, {}, (), None, 2, 0)
    assert [name for name, _, _ in sets] == ["example", "gen0:static", "gen1:static"]
    for _, args, kwargs in sets:
        assert len(args) == 1 and set(kwargs) == {"scale"}
        ep.module()(*args, **kwargs)
