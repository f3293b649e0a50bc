"""verify --benchmark (latency, peak device memory, ratio) and verify --graph (device-graph replay).
On CPU: the benchmark runs and prints its figures; --graph says in one line that it needs an
accelerator (exit 2). The capture itself is tested in test_accelerator.py."""

import json
import re

import pytest
import torch

from ts2export.artifact.errors import ArtifactError
from ts2export.artifact.serving import graph_api, time_runs

cpu_only = pytest.mark.skipif(torch.accelerator.is_available(), reason="checks the CPU-only behaviour")


def test_benchmark_prints_both_timings_and_the_ratio(artifacts, cli):
    code, out, err = cli(
        "verify", artifacts.torchscript("small_cnn"), artifacts.pt2("small_cnn"), "--benchmark", "--runs", "4", "--warmup", "2",
    )
    assert code == 0, out + err
    lines = out.splitlines()
    i = lines.index("benchmark forward on inputs example: 2 warm-up, median of 4 run(s)")
    dev = "cpu" if not torch.accelerator.is_available() else r"\w+:\d+"
    assert re.fullmatch(rf"  old \(torchscript\)\s+[\d.]+ ms  \(min [\d.]+ ms\) on {dev}; .*", lines[i + 1])
    assert re.fullmatch(rf"  new \(pt2\)\s+[\d.]+ ms  \(min [\d.]+ ms\) on {dev}; .*", lines[i + 2])
    assert re.fullmatch(r"  new / old: [\d.]+x", lines[i + 3])
    assert lines[-1].startswith("PASS: 4 comparison(s)")
    if not torch.accelerator.is_available():
        assert lines[i + 1].endswith("peak memory not reported on cpu")


def test_benchmark_in_json_and_per_method(artifacts, cli):
    old, new = artifacts.torchscript("multi_method"), artifacts.pt2("multi_method")
    code, out, err = cli("verify", old, new, "--benchmark", "--runs", "3", "--format", "json")
    assert code == 0, err
    report = json.loads(out)
    assert [b["method"] for b in report["benchmark"]] == ["forward", "encode"]
    for b in report["benchmark"]:
        assert b["runs"] == 3 and b["warmup"] == 5 and b["inputs"] == "example"
        assert b["old"]["kind"] == "torchscript" and b["new"]["kind"] == "pt2"
        assert b["old"]["median_ms"] > 0 and b["new"]["median_ms"] > 0
        assert b["ratio"] == pytest.approx(b["new"]["median_ms"] / b["old"]["median_ms"], rel=1e-3)
    assert report["graph"] is None


def test_benchmark_of_a_pte(artifacts, cli):
    pytest.importorskip("executorch")
    code, out, err = cli(
        "verify", artifacts.torchscript("small_cnn"), artifacts.pte("small_cnn"), "-i", "float32[B=1..8,3,16,16]",
        "--benchmark", "--runs", "3",
    )
    assert code == 0, out + err
    assert re.search(r"^  new \(pte\)\s+[\d.]+ ms .* on cpu; peak memory not reported on cpu$", out, re.M)


def test_time_runs_synchronises_and_counts():
    calls = []
    median, low, peak = time_runs(lambda: calls.append(1), torch.device("cpu"), warmup=2, runs=5)
    assert len(calls) == 7 and 0 <= low <= median and peak is None


def test_bad_run_counts(artifacts, cli):
    code, _, err = cli("verify", artifacts.torchscript("small_cnn"), artifacts.pt2("small_cnn"), "--benchmark", "--runs", "-1")
    assert code == 2 and err.strip() == "error: --runs and --warmup must be >= 0"


@cpu_only
def test_graph_without_an_accelerator_is_one_line_and_exit_2(artifacts, cli):
    old, new = artifacts.torchscript("small_cnn"), artifacts.pt2("small_cnn")
    for device in ("auto", "cpu"):
        code, out, err = cli("verify", old, new, "--graph", "--device", device)
        assert code == 2 and out == ""
        assert err.strip() == "error: --graph needs an accelerator: torch.accelerator finds none on this machine (cpu only)"
    code, out, err = cli("verify", old, new, "--graph", "--format", "json")
    assert code == 2 and json.loads(out)["status"] == "error"
    with pytest.raises(ArtifactError, match="--graph needs an accelerator"):
        graph_api(torch.device("cpu"))
