"""Files the tool creates are readable as `open` would make them (0o666 less the umask), not the
0o600 of the temporary file they are written through; files it rewrites keep their own mode
(issue 46, item 1). One test per writer: the atomic writers of both wings, the baseline, the HTML
and JSON reports, a converted .pt2 and a lowered .pte."""

from __future__ import annotations

import os
import stat

import pytest
import torch

from ts2export.artifact.fsutil import atomic_path, write_bytes_atomic
from ts2export.textio import atomic_write_bytes, new_file_mode

SOURCE = "import torch\n\n\n@torch.jit.script\ndef f(x):\n    return x + 1\n"


def mode(path) -> int:
    return stat.S_IMODE(os.stat(path).st_mode)


@pytest.fixture
def umask_022():
    old = os.umask(0o022)
    yield
    os.umask(old)


def test_new_files_follow_the_umask_and_rewritten_files_keep_their_mode(tmp_path, umask_022):
    assert new_file_mode() == 0o644
    atomic_write_bytes(tmp_path / "new.json", b"{}")
    assert mode(tmp_path / "new.json") == 0o644
    kept = tmp_path / "private.py"
    kept.write_text("x = 1\n")
    os.chmod(kept, 0o600)
    atomic_write_bytes(kept, b"x = 2\n", expected=b"x = 1\n")
    assert mode(kept) == 0o600 and kept.read_text() == "x = 2\n"
    os.umask(0o077)
    atomic_write_bytes(tmp_path / "strict.json", b"{}")
    assert mode(tmp_path / "strict.json") == 0o600


def test_the_artifact_wing_writers_give_new_files_the_umask_mode(tmp_path, umask_022):
    write_bytes_atomic(tmp_path / "a.pte", b"\0")
    with atomic_path(tmp_path / "b.pt2") as tmp:
        tmp.write_bytes(b"\0")
    assert mode(tmp_path / "a.pte") == mode(tmp_path / "b.pt2") == 0o644
    os.chmod(tmp_path / "a.pte", 0o640)
    write_bytes_atomic(tmp_path / "a.pte", b"\1")
    assert mode(tmp_path / "a.pte") == 0o640


def test_baseline_and_reports_are_readable(tmp_path, run_cli, umask_022):
    (tmp_path / "m.py").write_text(SOURCE)
    code, _, _ = run_cli("baseline", tmp_path, "-o", tmp_path / "baseline.json")
    assert code == 0 and mode(tmp_path / "baseline.json") == 0o644
    code, _, _ = run_cli("report", tmp_path, "--format", "html", "-o", tmp_path / "report.html")
    assert code == 0 and mode(tmp_path / "report.html") == 0o644
    code, _, _ = run_cli("check", tmp_path, "--format", "json", "-o", tmp_path / "check.json")
    assert mode(tmp_path / "check.json") == 0o644


@pytest.mark.slow
def test_converted_and_lowered_programs_are_readable(tmp_path, run_cli, umask_022):
    torch.jit.script(torch.nn.Linear(4, 2).eval()).save(str(tmp_path / "m.pt"))
    code, out, err = run_cli("convert", tmp_path / "m.pt", "-o", tmp_path / "m.pt2", "-i", "float32[2,4]")
    assert code == 0, out + err
    assert mode(tmp_path / "m.pt2") == 0o644
    code, out, err = run_cli("lower", tmp_path / "m.pt2", "-o", tmp_path / "m.pte")
    assert code == 0, out + err
    assert mode(tmp_path / "m.pte") == 0o644
