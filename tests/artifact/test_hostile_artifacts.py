"""Damaged artifacts: a truncated, empty or not-a-zip .pt / .pt2 / .pte given to convert, verify,
lower or migrate-artifact gets one `error:` line naming the file, exit 2, and no output file."""

from __future__ import annotations

import subprocess
import sys

import pytest

MODEL = "small_cnn"


def damaged(good: bytes) -> dict[str, bytes]:
    return {
        "empty": b"",
        "truncated-half": good[: len(good) // 2],
        "truncated-tail": good[:-64],  # only the zip's central directory is missing
        "not-a-zip": b"\x00garbage, not an archive\n" * 40,
    }


def assert_one_line(code: int, out: str, err: str, name: str) -> None:
    lines = [line for line in err.splitlines() if line.strip()]
    assert code == 2, (name, code, out, err)
    assert len(lines) == 1 and lines[0].startswith("error: "), (name, err)
    assert name in lines[0], (name, lines[0])
    assert "Traceback" not in out + err


@pytest.fixture(scope="module")
def good(artifacts):
    specs, _ = artifacts.specs(MODEL)
    return {"pt": artifacts.torchscript(MODEL), "pt2": artifacts.pt2(MODEL), "pte": artifacts.pte(MODEL), "specs": specs}


# Runs each command line of argv[1:] (JSON lists) through the real CLI in this one process, writing
# a separator to file descriptor 2 after each, so that what native code writes there is seen too.
_MANY = """
import json, os, sys
from ts2export.cli import app
for args in map(json.loads, sys.argv[1:]):
    try:
        app(args)
        code = 0
    except SystemExit as exc:
        code = exc.code
    sys.stdout.flush(); sys.stderr.flush()
    os.write(2, f"=== exit {code}\\n".encode())
"""


def run_real_cli(runs: list[tuple]) -> list[tuple[int, str]]:
    """(exit code, stderr) of each command line, from one real process: the ExecuTorch runtime logs
    through native code, which the CLI silences at the file descriptor (what a user sees)."""
    import json

    argv = [json.dumps([str(a) for a in args]) for args in runs]
    proc = subprocess.run([sys.executable, "-c", _MANY, *argv], capture_output=True, text=True, timeout=600)
    chunks, tail = [], proc.stderr  # the stderr of run i is the text before its separator
    for _ in runs:
        before, _, tail = tail.partition("=== exit ")
        code, _, tail = tail.partition("\n")
        assert code, proc.stderr
        chunks.append((int(code), before))
    return chunks


@pytest.mark.slow
@pytest.mark.parametrize("suffix", ["pt", "pt2", "pte"])
def test_damaged_artifacts_are_one_line_exit_2(good, cli, tmp_path, suffix):
    spec_args = [a for s in good["specs"] for a in ("-i", s)]
    runs, files = [], {}
    for kind, data in damaged(good[suffix].read_bytes()).items():
        bad = tmp_path / f"{kind}.{suffix}"
        bad.write_bytes(data)
        files[bad] = data
        if suffix == "pt":
            runs.append((bad, ("convert", bad, "-o", tmp_path / "out.pt2", *spec_args)))
            runs.append((bad, ("verify", bad, good["pt2"], "--device", "cpu")))
            runs.append((bad, ("migrate-artifact", bad, "--out", tmp_path / "migrated", "--no-lower", *spec_args)))
        elif suffix == "pt2":
            runs.append((bad, ("verify", good["pt"], bad, "--device", "cpu")))
            runs.append((bad, ("lower", bad, "-o", tmp_path / "out.pte")))
        else:
            runs.append((bad, ("verify", good["pt"], bad, "--device", "cpu")))
    if suffix == "pte":
        results = [(code, "", err) for code, err in run_real_cli([args for _, args in runs])]
    else:
        results = [cli(*args) for _, args in runs]
    for (bad, args), (code, out, err) in zip(runs, results):
        assert_one_line(code, out, err, bad.name)
    for bad, data in files.items():
        assert bad.read_bytes() == data, "the damaged input is left as it was"
    assert not (tmp_path / "out.pt2").exists() and not (tmp_path / "out.pte").exists(), "no output from a damaged input"
