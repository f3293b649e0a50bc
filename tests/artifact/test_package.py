"""package: an AOTInductor package for C++ servers, told apart from a torch.export .pt2, verified
against the TorchScript original, loaded from C++ with the code in docs/artifacts.md.

One small corpus model is compiled once for the whole run (AOTInductor takes about a minute on CPU): the
tests run on one xdist worker, and a file lock still guards the build."""

import json
import os
import re
import shutil
import subprocess
from pathlib import Path

import pytest
import torch
from filelock import FileLock

from ts2export.artifact.errors import ArtifactError
from ts2export.artifact.loading import artifact_kind, load_pt2, load_torchscript

from .conftest import ROOT, _quiet, load_corpus, method_specs, save_torchscript

COMPILER = shutil.which("g++") or shutil.which("c++") or shutil.which("clang++")

pytestmark = [
    pytest.mark.slow,
    pytest.mark.xdist_group("aot_package"),  # one worker builds the package; no other waits on its lock
    pytest.mark.skipif(COMPILER is None, reason="AOTInductor needs a C++ compiler (g++); .ci/run installs it"),
]


@pytest.fixture(scope="session")
def packaged(tmp_path_factory):
    """(TorchScript, .pt2, package, package stdout) for small_cnn, built once for all workers."""
    from typer.testing import CliRunner

    from ts2export.artifact.convert import convert
    from ts2export.artifact.cli import make_app

    base = tmp_path_factory.getbasetemp()
    shared = base.parent if os.environ.get("PYTEST_XDIST_WORKER") else base  # one directory for all workers of this run
    work = shared / "aoti"
    old, pt2, pkg, log = work / "small_cnn.pt", work / "small_cnn.pt2", work / "small_cnn_aoti.pt2", work / "package.out"
    with FileLock(str(shared / "aoti.lock")):
        if not log.exists():
            work.mkdir(exist_ok=True)
            model, example, specs, legacy = load_corpus("small_cnn")
            save_torchscript(model, example, legacy, old)
            with _quiet():
                convert(str(old), str(pt2), method_specs("small_cnn", specs)[0])
            result = CliRunner().invoke(make_app(), ["package", str(pt2), "-o", str(pkg), "--verify"], catch_exceptions=False)
            assert result.exit_code == 0, result.stdout + result.stderr
            log.write_text(result.stdout, encoding="utf-8")
    return old, pt2, pkg, log.read_text(encoding="utf-8")


def test_package_compiles_and_checks_itself_against_the_pt2(packaged):
    _, pt2, pkg, out = packaged
    lines = out.splitlines()
    assert re.fullmatch(r"forward: compiled with AOTInductor for cpu in [\d.]+ s; inputs float32\[B=1\.\.8,3,16,16\]", lines[0])
    assert lines[1].startswith(f"wrote {pkg} (") and "torch::inductor::AOTIModelPackageLoader" in lines[1]
    assert "pt2 vs package" in out and lines[-1].startswith(f"PASS: 4 comparison(s), 0 mismatch(es) on cpu; {pt2} vs {pkg}")


def test_the_package_is_told_apart_from_a_program_archive(packaged, tmp_path):
    old, pt2, pkg, _ = packaged
    assert [artifact_kind(p) for p in (old, pt2, pkg)] == ["torchscript", "pt2", "aoti"]
    (tmp_path / "junk.bin").write_bytes(b"not an artifact")
    assert artifact_kind(tmp_path / "junk.bin") == "unknown"
    with pytest.raises(ArtifactError, match="this is an AOTInductor package, not TorchScript"):
        load_torchscript(pkg)
    with pytest.raises(ArtifactError, match="this is an AOTInductor package, not a torch.export program"):
        load_pt2(pkg)
    # what verify needs is stored next to the compiled code
    from ts2export.artifact.package import package_meta

    meta = package_meta(pkg)
    assert meta["device"] == "cpu" and meta["source"] == str(pt2)
    assert meta["methods"]["forward"]["inputs"] == ["float32[B=1..8,3,16,16]"]


def test_verify_runs_the_package_against_the_torchscript_original(packaged, cli):
    old, _, pkg, _ = packaged
    code, out, err = cli("verify", old, pkg, "--format", "json")
    assert code == 0, out + err
    report = json.loads(out)
    assert report["status"] == "pass" and report["comparisons"] == 4
    assert [r["inputs"] for r in report["rows"]] == ["example", "gen0:min(B=1)", "gen1:max(B=8)", "gen2:mid(B=4)"]
    code, out, err = cli("verify", old, pkg, "--benchmark", "--runs", "3", "-i", "float32[B=2..6,3,16,16]")
    assert code == 0, out + err
    assert re.search(r"^  new \(aoti\)\s+[\d.]+ ms", out, re.M) and "min(B=2)" in out and "max(B=6)" in out
    code, out, err = cli("verify", old, pkg, "-i", "float32[B=9..9,3,16,16]")
    assert code == 2 and "outside its range 1..8" in err


def test_a_changed_original_is_a_mismatch(packaged, cli, tmp_path):
    _, _, pkg, _ = packaged
    model, example, _, legacy = load_corpus("small_cnn")
    with torch.no_grad():
        model.head.bias[3] += 0.25
    other = save_torchscript(model, example, legacy, tmp_path / "changed.pt")
    code, out, _ = cli("verify", other, pkg)
    assert code == 1 and out.strip().splitlines()[-1].startswith("FAIL: 4 comparison(s), 4 mismatch(es)")


def test_package_errors_are_one_line(packaged, cli, tmp_path):
    old, pt2, pkg, _ = packaged
    cases = [
        (("package", pt2, "-o", tmp_path / "x.so"), "must be named *.pt2"),
        (("package", old, "-o", tmp_path / "x.pt2"), "this is TorchScript, not a .pt2"),
        (("package", pkg, "-o", tmp_path / "x.pt2"), "this is an AOTInductor package, not a torch.export program"),
        (("package", pt2, "-o", tmp_path / "x.pt2", "--method", "encode"), "no program 'encode'"),
        (("verify", old, pkg, "--graph"), "--graph"),
    ]
    if not torch.accelerator.is_available():
        cases.append((("package", pt2, "-o", tmp_path / "x.pt2", "--device", "cuda"), "is not present"))
    for args, message in cases:
        code, out, err = cli(*args)
        assert code == 2, (args, out, err)
        assert err.startswith("error: ") and message in err and len(err.strip().splitlines()) == 1, (args, err)
    assert not (tmp_path / "x.pt2").exists()


def _cpp_example() -> str:
    text = (ROOT / "docs" / "artifacts.md").read_text(encoding="utf-8")
    blocks = re.findall(r"```cpp\n(.*?)```", text, re.S)
    (code,) = [b for b in blocks if "AOTIModelPackageLoader" in b and "int main" in b]
    return code


def test_the_documented_cpp_code_loads_and_runs_the_package(packaged, tmp_path):
    old, _, pkg, _ = packaged
    source = tmp_path / "load_package.cpp"
    source.write_text(_cpp_example(), encoding="utf-8")
    torch_dir = Path(torch.__file__).parent
    cmd = [
        COMPILER, "-std=c++20", str(source), "-o", str(tmp_path / "load_package"),
        f"-I{torch_dir / 'include'}", f"-I{torch_dir / 'include' / 'torch' / 'csrc' / 'api' / 'include'}",
        f"-L{torch_dir / 'lib'}", "-ltorch", "-ltorch_cpu", "-lc10", f"-Wl,-rpath,{torch_dir / 'lib'}",
    ]
    build = subprocess.run(cmd, capture_output=True, text=True, timeout=900)
    assert build.returncode == 0, build.stderr[-3000:]
    run = subprocess.run([str(tmp_path / "load_package"), str(pkg)], capture_output=True, text=True, timeout=300)
    assert run.returncode == 0, run.stderr[-2000:]
    shape, total = run.stdout.split("] ")
    with torch.inference_mode():
        expected = torch.jit.load(str(old))(torch.ones(4, 3, 16, 16))
    assert shape + "]" == "[4, 10]"
    assert float(total) == pytest.approx(float(expected.sum()), rel=1e-4, abs=1e-4)


def test_migrate_artifact_adds_the_package_step(artifacts, cli, tmp_path):
    out = tmp_path / "run"
    code, stdout, err = cli(
        "migrate-artifact", artifacts.torchscript("small_cnn"), "-i", "float32[B=1..8,3,16,16]", "--out", out,
        "--package", "--no-lower",
    )
    assert code == 0, stdout + err
    assert [line.split(":")[0] for line in stdout.splitlines()[:4]] == ["convert", "verify .pt2", "package", "verify package"]
    stem = artifacts.torchscript("small_cnn").stem
    assert artifact_kind(out / f"{stem}_aoti.pt2") == "aoti"
    report = json.loads((out / "report.json").read_text())
    assert [s["result"] for s in report["steps"]] == ["ok", "pass", "ok", "pass"]
    assert report["package"]["device"] == "cpu" and report["verify_package"]["comparisons"] == 4
    assert "## Verify: TorchScript vs AOTInductor package" in (out / "report.md").read_text()


def test_no_cpp_compiler_is_one_line(artifacts, tmp_path):
    import sys

    env = {**os.environ, "CXX": str(tmp_path / "no-such-g++"), "TORCHINDUCTOR_CACHE_DIR": str(tmp_path / "cache")}
    out = tmp_path / "x.pt2"
    proc = subprocess.run(
        [sys.executable, "-m", "ts2export.artifact", "package", str(artifacts.pt2("small_cnn")), "-o", str(out)],
        capture_output=True, text=True, cwd=ROOT, env=env, timeout=600,
    )
    assert proc.returncode == 2 and not out.exists()
    assert proc.stderr.strip().splitlines()[-1] == (
        "error: cannot compile forward with AOTInductor for cpu: no C++ compiler found "
        "(AOTInductor needs g++ or clang++ on PATH, or CXX set)"
    )
