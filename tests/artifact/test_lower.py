"""lower: every corpus model lowers to a .pte that runs through executorch.runtime and matches."""

import json
import re
import sys

import pytest
import torch

from ts2export.artifact.loading import load_pt2

from .conftest import CHAIN_MODELS, load_corpus

pytestmark = pytest.mark.slow  # lowers models


@pytest.mark.parametrize("name", CHAIN_MODELS)
def test_corpus_pte_matches_pt2_and_torchscript(artifacts, name):
    from executorch.runtime import Runtime

    from ts2export.artifact.verify import verify_pte_against_program

    pte = artifacts.pte(name)
    report = verify_pte_against_program(str(artifacts.pt2(name)), str(pte))
    assert report.ok, report.to_text()
    # the .pte runs on its own through executorch.runtime
    model, example, _, _ = load_corpus(name)
    program = Runtime.get().load_program(pte)
    _, methods = artifacts.specs(name)
    assert set(program.method_names) == set(methods or ["forward"])
    flat = [t.contiguous() for t in torch.utils._pytree.tree_leaves(example)]
    outputs = program.load_method("forward").execute(flat)
    with torch.inference_mode():
        expected = torch.utils._pytree.tree_leaves(load_pt2(artifacts.pt2(name))[0]["forward"].module()(*example))
    assert len(outputs) == len(expected)
    for got, want in zip(outputs, expected):
        torch.testing.assert_close(got, want)


def test_lower_cli_reports_size_delegation_and_verifies(artifacts, cli, tmp_path):
    out = tmp_path / "cnn.pte"
    code, stdout, err = cli("lower", artifacts.pt2("small_cnn"), "-o", out, "--verify")
    assert code == 0, stdout + err
    first = stdout.splitlines()[0]
    assert first.startswith(f"wrote {out} (") and "KiB, backend xnnpack" in first
    assert "ops delegated" in stdout and "portable kernels: aten_mean_dim" in stdout
    assert "PASS: 4 comparison(s), 0 mismatch(es) on cpu" in stdout
    assert out.stat().st_size > 1000


def test_control_flow_is_decomposed_before_xnnpack(cli, tmp_path):
    from .conftest import save_torchscript

    model, example, _, _ = load_corpus("branchy")
    old = save_torchscript(model, example, "script", tmp_path / "b.pt")
    code, _, err = cli("convert", old, "-o", tmp_path / "b.pt2", "-i", "float32[2,8]")
    assert code == 0, err
    code, out, err = cli("lower", tmp_path / "b.pt2", "-o", tmp_path / "b.pte", "--verify", "--samples", "4")
    assert code == 0, out + err
    assert "control flow decomposed first" in out


def test_mx_float8_weights_are_folded(artifacts, cli, tmp_path):
    code, out, err = cli("lower", artifacts.pt2("mx_block_scaled"), "-o", tmp_path / "mx.pte", "--verify")
    assert code == 0, out + err
    assert "float8 weights folded to float32 constants" in out


def test_float8_at_run_time_is_refused(cli, tmp_path):
    from .conftest import save_torchscript

    model, example, specs, _ = load_corpus("mx_block_scaled", "build_quantizer")
    old = save_torchscript(model, example, "script", tmp_path / "q.pt")
    code, _, err = cli("convert", old, "-o", tmp_path / "q.pt2", "-i", specs[0])
    assert code == 0, err
    code, out, err = cli("verify", old, tmp_path / "q.pt2", "--format", "json")
    assert code == 0, err
    dtypes = {r["dtype"] for r in json.loads(out)["rows"]}
    assert dtypes == {"float8_e4m3fn", "float8_e8m0fnu"}
    code, out, err = cli("lower", tmp_path / "q.pt2", "-o", tmp_path / "q.pte")
    assert code == 2 and err.startswith("error: ") and not (tmp_path / "q.pte").exists()


def test_portable_backend(artifacts, cli, tmp_path):
    code, out, err = cli("lower", artifacts.pt2("multi_input_mlp"), "-o", tmp_path / "p.pte", "--backend", "portable", "--verify")
    assert code == 0, out + err
    assert "0/" in out and "(0%)" in out and "backend portable" in out


def test_multi_method_bundle(artifacts, cli, tmp_path):
    from executorch.devtools.bundled_program.serialize import deserialize_from_flatbuffer_to_bundled_program

    out = tmp_path / "mm.pte"
    code, stdout, err = cli("lower", artifacts.pt2("multi_method"), "-o", out, "--bundle")
    assert code == 0, stdout + err
    bundle = tmp_path / "mm.bpte"
    assert f"wrote bundle {bundle} (8 test case(s), checked by the runtime)" in stdout
    bp = deserialize_from_flatbuffer_to_bundled_program(bundle.read_bytes())
    suites = {s.method_name: len(s.test_cases) for s in bp.method_test_suites}
    assert suites == {"forward": 4, "encode": 4}


def test_lower_errors(artifacts, cli, tmp_path):
    code, _, err = cli("lower", artifacts.pt2("small_cnn"), "-o", tmp_path / "x.pte", "--backend", "vulkan")
    assert code == 2 and "unknown backend 'vulkan'" in err
    code, _, err = cli("lower", tmp_path / "none.pt2", "-o", tmp_path / "x.pte")
    assert code == 2 and "no such file" in err
    assert not (tmp_path / "x.pte").exists()


def test_without_executorch_lower_says_how_to_install(artifacts, cli, tmp_path, monkeypatch):
    for mod in list(sys.modules):
        if mod == "executorch" or mod.startswith("executorch."):
            monkeypatch.delitem(sys.modules, mod)
    monkeypatch.setitem(sys.modules, "executorch", None)
    code, out, err = cli("lower", artifacts.pt2("small_cnn"), "-o", tmp_path / "x.pte")
    assert code == 2
    assert err.strip() == "error: lowering needs executorch: pip install 'ts2export[edge]'"
    assert not (tmp_path / "x.pte").exists()


def test_unbounded_dim_gets_a_planned_limit_and_verify_keeps_within_it(artifacts, cli, tmp_path):
    code, _, err = cli("convert", artifacts.torchscript("multi_input_mlp"), "-o", tmp_path / "u.pt2", "-i", "float32[B=1..,16]", "-i", "float32[B,8]")
    assert code == 0, err
    code, out, err = cli("lower", tmp_path / "u.pt2", "-o", tmp_path / "u.pte", "--verify")
    assert code == 0, out + err
    note = next(line for line in out.splitlines() if "note:" in line)
    top = int(re.search(r"plans memory for at most (\d+)", note).group(1))
    assert "forward dim B has no upper bound" in note
    assert f"max(B={top})" in out and "PASS: 4 comparison(s)" in out
