"""Hostile inputs: each gets one clear line on stderr (or none, where nothing is wrong), the right
exit code, and nothing is lost: a file the tool cannot handle is never written, the others are."""

import os
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

CONSTRUCT = "import torch\n\nx = torch.jit.annotate(int, torch.ones(1))\n"
FIXED = "import torch\n\nx = torch.ones(1)\n"
PINNED = '[tool.ts2export]\nselect = ["TSX001", "TSX201"]\n'


def tree(root: Path, files: dict | None = None) -> Path:
    """A project pinned to two rules, a good file that apply fixes, and ``files`` (name -> contents)."""
    (root / "pyproject.toml").write_text(PINNED)
    (root / "good.py").write_text(CONSTRUCT)
    for name, content in (files or {}).items():
        path = root / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(content if isinstance(content, bytes) else content.encode())
    return root


def error_lines(err: str) -> list[str]:
    return [line for line in err.splitlines() if line.strip()]


def assert_good_fixed(root: Path) -> None:
    assert (root / "good.py").read_text() == FIXED, "the run goes on past the hostile file"


def test_syntax_error(tmp_path, run_cli):
    bad = b"import torch\ndef f(:\n    torch.jit.script(f)\n"
    tree(tmp_path, {"bad.py": bad})
    code, out, err = run_cli("apply", ".", cwd=tmp_path)
    assert code == 2
    assert error_lines(err) == ["bad.py: error: syntax error at line 2, column 7: invalid syntax"]
    assert (tmp_path / "bad.py").read_bytes() == bad
    assert_good_fixed(tmp_path)


def test_undecodable_bytes(tmp_path, run_cli):
    bad = b"import torch\nname = '\xff\xfe caf\xe9'\nx = torch.jit.annotate(int, 1)\n"
    (tmp_path / "bad.py").write_bytes(bad)
    tree(tmp_path)
    code, out, err = run_cli("apply", ".", cwd=tmp_path)
    assert code == 2
    [line] = error_lines(err)
    assert line.startswith("bad.py: error: cannot decode: ") and "PEP 263" in line
    assert (tmp_path / "bad.py").read_bytes() == bad
    assert_good_fixed(tmp_path)


def test_latin1_with_coding_cookie(tmp_path, run_cli):
    src = "# -*- coding: latin-1 -*-\nimport torch\ns = 'd\xe9j\xe0'\nx = torch.jit.annotate(int, torch.ones(1))\n"
    tree(tmp_path, {"latin.py": src.encode("latin-1")})
    code, out, err = run_cli("apply", ".", cwd=tmp_path)
    assert (code, err) == (0, "")
    assert (tmp_path / "latin.py").read_bytes() == src.replace("torch.jit.annotate(int, torch.ones(1))", "torch.ones(1)").encode("latin-1")


def test_bom_crlf_and_mixed_newlines(tmp_path, run_cli):
    bom = b"\xef\xbb\xbfimport torch\r\n\r\nx = torch.jit.annotate(int, torch.ones(1))\r\n"
    mixed = b"import torch\r\ny = 2\nx = torch.jit.annotate(int, torch.ones(1))\r\nz = 3\n"
    old_mac = b"import torch\rx = torch.jit.annotate(int, torch.ones(1))\ry = 2\r"
    for name, data in (("bom.py", bom), ("mixed.py", mixed), ("cr.py", old_mac)):
        (tmp_path / name).write_bytes(data)
    tree(tmp_path)
    code, out, err = run_cli("apply", ".", cwd=tmp_path)
    assert (code, err) == (0, "")
    assert (tmp_path / "bom.py").read_bytes() == b"\xef\xbb\xbfimport torch\r\n\r\nx = torch.ones(1)\r\n"
    # every line keeps its own ending
    assert (tmp_path / "mixed.py").read_bytes() == b"import torch\r\ny = 2\nx = torch.ones(1)\r\nz = 3\n"
    assert (tmp_path / "cr.py").read_bytes() == b"import torch\rx = torch.ones(1)\ry = 2\r"


def test_tabs(tmp_path, run_cli):
    src = "import torch\n\n\ndef f(x):\n\tif x:\n\t\treturn torch.jit.annotate(int, x)  # tab\tinside\n\treturn torch.ones(1)\n"
    tree(tmp_path, {"tabs.py": src})
    code, out, err = run_cli("apply", ".", cwd=tmp_path)
    assert (code, err) == (0, "")
    assert (tmp_path / "tabs.py").read_text() == src.replace("torch.jit.annotate(int, x)", "x")


def _ten_megabytes(construct: bool) -> bytes:
    head = CONSTRUCT if construct else "import torch\n\n"
    block = "".join(f"def f_{i}(x):\n    return x * {i} + 0.5\n\n\n" for i in range(1000))
    data = head + block * (10_000_000 // len(block) + 1)
    assert len(data) > 10_000_000
    return data.encode()


def test_ten_megabyte_file(tmp_path, run_cli):
    big = _ten_megabytes(construct=True)
    plain = _ten_megabytes(construct=False)
    (tmp_path / "big.py").write_bytes(big)
    (tmp_path / "plain.py").write_bytes(plain)
    tree(tmp_path)
    code, out, err = run_cli("apply", ".", cwd=tmp_path)  # does not parse 10 MB (minutes with libcst)
    assert code == 2
    assert error_lines(err) == [
        "big.py: error: too large to check (10.0 MB; the limit is 2.0 MB): raise max-file-size in [tool.ts2export] to check it"
    ]
    assert (tmp_path / "big.py").read_bytes() == big
    assert (tmp_path / "plain.py").read_bytes() == plain  # nothing to migrate: skipped quietly
    assert_good_fixed(tmp_path)


def test_max_file_size_is_configurable(tmp_path, run_cli):
    tree(tmp_path)
    (tmp_path / "pyproject.toml").write_text(PINNED + "max-file-size = 0.00002\n")  # 20 bytes
    code, out, err = run_cli("check", ".", cwd=tmp_path)
    assert code == 2
    assert error_lines(err) == [f"good.py: error: too large to check ({len(CONSTRUCT)} bytes; the limit is 20 bytes): raise max-file-size in [tool.ts2export] to check it"]
    (tmp_path / "pyproject.toml").write_text(PINNED + "max-file-size = 'big'\n")
    code, out, err = run_cli("check", ".", cwd=tmp_path)
    assert code == 2 and error_lines(err) == [f"error: {tmp_path / 'pyproject.toml'}: [tool.ts2export] max-file-size must be a positive number of megabytes"]


DEEP = {
    "parens": "x = torch.jit.annotate(int, " + "(" * 300 + "1" + ")" * 300 + ")\n",
    "lists": "x = torch.jit.annotate(int, " + "[" * 190 + "1" + "]" * 190 + ")\n",
    "chain": "x = torch.jit.annotate(int, " + "+".join(["1"] * 30000) + ")\n",
    "unary": "x = torch.jit.annotate(int, " + "-" * 30000 + "1)\n",
    "calls": "x = torch.jit.annotate(int, f" + "()" * 30000 + ")\n",
    "blocks": "".join(" " * i + "if x:\n" for i in range(101)) + " " * 101 + "y = torch.jit.annotate(int, 1)\n",
}


def test_deeply_nested_expressions(tmp_path, run_cli):
    # Where libcst gives up depends on the recursion limit; earlier tests in the same worker
    # (hypothesis raises it while it runs) may leave it higher. Check at CPython's default.
    limit = sys.getrecursionlimit()
    sys.setrecursionlimit(1000)
    try:
        _check_deeply_nested(tmp_path, run_cli)
    finally:
        sys.setrecursionlimit(limit)


def _check_deeply_nested(tmp_path, run_cli):
    for name, body in DEEP.items():
        (tmp_path / f"{name}.py").write_text("import torch\n" + body)
    tree(tmp_path)
    before = {p.name: p.read_bytes() for p in tmp_path.glob("*.py")}
    code, out, err = run_cli("apply", "--jobs", "1", ".", cwd=tmp_path)
    assert code == 2
    lines = error_lines(err)
    assert [line.split(":")[0] for line in lines] == sorted(f"{name}.py" for name in DEEP)
    for line in lines:
        assert ": error: syntax error at line" in line or line.endswith(": error: too deeply nested for the parser"), line
    for name in DEEP:
        assert (tmp_path / f"{name}.py").read_bytes() == before[f"{name}.py"]
    assert_good_fixed(tmp_path)


def test_symlink_loops(tmp_path, run_cli):
    tree(tmp_path)
    (tmp_path / "pkg").mkdir()
    (tmp_path / "pkg" / "mod.py").write_text(CONSTRUCT)
    (tmp_path / "pkg" / "again").symlink_to(tmp_path / "pkg")  # a folder loop: followed once
    (tmp_path / "loop.py").symlink_to("loop.py")  # a file that links to itself
    code, out, err = run_cli("check", ".", cwd=tmp_path)
    assert code == 2
    assert error_lines(err) == ["loop.py: error: cannot read: a symbolic link that loops"]
    assert sorted(line.split(":")[0] for line in out.splitlines() if ": TSX" in line) == ["good.py", "pkg/mod.py"]
    code, out, err = run_cli("check", "loop.py", cwd=tmp_path)
    assert (code, error_lines(err)) == (2, ["error: loop.py: broken symbolic link (it loops, or points to a missing file)"])


def test_symlinked_file_stays_a_link(tmp_path, run_cli):
    tree(tmp_path)
    (tmp_path / "real").mkdir()
    (tmp_path / "real" / "target.txt").write_text(CONSTRUCT)
    (tmp_path / "link.py").symlink_to(Path("real") / "target.txt")
    code, out, err = run_cli("apply", ".", cwd=tmp_path)
    assert (code, err) == (0, "")
    assert (tmp_path / "link.py").is_symlink()
    assert (tmp_path / "real" / "target.txt").read_text() == FIXED


def _can_read(path: Path) -> bool:
    try:
        path.read_bytes()
    except PermissionError:
        return False
    return True


def test_unreadable_file(tmp_path, run_cli):
    bad = tree(tmp_path, {"secret/mod.py": CONSTRUCT}) / "secret" / "mod.py"
    bad.chmod(0)
    try:
        if not _can_read(bad):
            code, out, err = run_cli("apply", ".", cwd=tmp_path)
        else:
            # root reads anything: run the CLI without the capabilities that let it (util-linux setpriv)
            setpriv = shutil.which("setpriv")
            if setpriv is None:
                pytest.skip("running as root, which reads a chmod 000 file, and setpriv is not there to drop that power")
            cmd = [setpriv, "--bounding-set=-dac_override,-dac_read_search", "--", sys.executable, "-m", "ts2export", "apply", "."]
            proc = subprocess.run(cmd, cwd=tmp_path, capture_output=True, text=True, timeout=300)
            if "setpriv:" in proc.stderr:
                pytest.skip(f"running as root and setpriv cannot drop capabilities here: {proc.stderr.strip()}")
            code, _out, err = proc.returncode, proc.stdout, proc.stderr
        assert code == 2
        assert error_lines(err) == ["secret/mod.py: error: cannot read: Permission denied"]
        assert_good_fixed(tmp_path)
    finally:
        bad.chmod(0o644)
    assert bad.read_text() == CONSTRUCT


def test_read_only_file_under_apply(tmp_path, run_cli):
    ro = tree(tmp_path, {"ro.py": CONSTRUCT}) / "ro.py"
    ro.chmod(0o444)
    code, out, err = run_cli("apply", ".", cwd=tmp_path)
    assert code == 2
    assert error_lines(err) == ["ro.py: error: read-only file, not rewritten (make it writable to apply the fixes)"]
    assert ro.read_text() == CONSTRUCT and (ro.stat().st_mode & 0o777) == 0o444
    assert "ro.py: fixed 0, left 1" in out  # what the fix would have done is still reported
    assert_good_fixed(tmp_path)


def test_directory_named_like_a_python_file(tmp_path, run_cli):
    tree(tmp_path, {"x.py/inner.py": CONSTRUCT})
    code, out, err = run_cli("check", ".", cwd=tmp_path)
    assert (code, err) == (1, "")
    assert [line.split(":")[0] for line in out.splitlines() if ": TSX" in line] == ["good.py", "x.py/inner.py"]
    code, out, err = run_cli("apply", "x.py", cwd=tmp_path)
    assert (code, err) == (0, "")
    assert (tmp_path / "x.py" / "inner.py").read_text() == FIXED


def test_file_changed_while_the_tool_runs(tmp_path, run_cli, monkeypatch):
    """apply computes the fixes, then (before it writes) an editor saves a newer version: apply must
    keep the newer version and say so."""
    from ts2export import cli

    tree(tmp_path, {"edited.py": CONSTRUCT, "removed.py": CONSTRUCT})
    edited, removed = tmp_path / "edited.py", tmp_path / "removed.py"
    newer = CONSTRUCT + "y = torch.jit.annotate(int, 2)  # saved by an editor meanwhile\n"
    real = cli._with_progress

    def engine_then_edit(*args, **kwargs):
        results = real(*args, **kwargs)
        edited.write_text(newer)
        removed.unlink()
        return results

    monkeypatch.setattr(cli, "_with_progress", engine_then_edit)
    code, out, err = run_cli("apply", ".", cwd=tmp_path)
    assert code == 2
    assert error_lines(err) == [
        "edited.py: error: changed while ts2export was running; not rewritten (run apply again)",
        "removed.py: error: removed.py was removed while ts2export was running; nothing written",
    ]
    assert edited.read_text() == newer and not removed.exists()
    assert_good_fixed(tmp_path)


def test_file_changed_during_the_write_itself(tmp_path, monkeypatch):
    """The last check is made after the new contents are on disk, just before the rename."""
    from ts2export import textio

    path = tmp_path / "m.py"
    path.write_text(CONSTRUCT)
    real_fsync = os.fsync

    def fsync_while_edited(fd):
        path.write_text("edited meanwhile\n")
        real_fsync(fd)

    monkeypatch.setattr(textio.os, "fsync", fsync_while_edited)
    with pytest.raises(textio.NotRewritten, match="changed while ts2export was running"):
        textio.atomic_write_bytes(path, FIXED.encode(), expected=CONSTRUCT.encode())
    assert path.read_text() == "edited meanwhile\n"
    assert [p.name for p in tmp_path.iterdir()] == ["m.py"], "no temporary file left"


def test_empty_files(tmp_path, run_cli):
    tree(tmp_path, {"empty.py": b"", "bom_only.py": b"\xef\xbb\xbf", "blank.py": b"\n\n   \n"})
    code, out, err = run_cli("apply", ".", cwd=tmp_path)
    assert (code, err) == (0, "")
    assert (tmp_path / "empty.py").read_bytes() == b"" and (tmp_path / "bom_only.py").read_bytes() == b"\xef\xbb\xbf"
    code, out, err = run_cli("check", "empty.py", cwd=tmp_path)
    assert (code, err) == (0, "") and out.strip() == "Found 0 TorchScript findings in 0 of 1 file."


NOTEBOOK = ('{"cells": [{"cell_type": "code", "metadata": {}, "source": ["import torch\\n", '
            '"x = torch.jit.annotate(int, torch.ones(1))\\n"]}], "nbformat": 4}\n')


def test_notebooks_are_checked_and_never_rewritten_unfaithfully(tmp_path, run_cli):
    """A notebook's code cells are checked and fixed (ts2export.engine.notebooks); one whose JSON layout
    the json module does not reproduce (here: no spaces after the separators) is not rewritten."""
    compact = NOTEBOOK.replace(": ", ":").replace(", ", ",")
    tree(tmp_path, {"nb/uses_jit.ipynb": NOTEBOOK, "nb/compact.ipynb": compact, "nb/plain.ipynb": NOTEBOOK.replace("torch.jit.annotate(int, torch.ones(1))", "1"),
                    "nb/broken.ipynb": '{"cells": [', "nb/not_a_notebook.ipynb": "[1, 2]\n"})
    code, out, err = run_cli("check", "nb/uses_jit.ipynb", cwd=tmp_path)
    assert code == 1 and "nb/uses_jit.ipynb:cell 1:2:5: TSX201" in out
    code, out, err = run_cli("apply", ".", cwd=tmp_path)
    assert code == 2 and error_lines(err) == [
        "nb/broken.ipynb: error: cannot read the notebook: Expecting value: line 1 column 12 (char 11)",
        "nb/compact.ipynb: error: cannot rewrite faithfully: the json module does not reproduce this notebook "
        "byte for byte",
        "nb/not_a_notebook.ipynb: error: cannot read the notebook: no list of cells",
    ]
    assert (tmp_path / "nb" / "compact.ipynb").read_text() == compact
    assert (tmp_path / "nb" / "uses_jit.ipynb").read_text() == NOTEBOOK.replace("torch.jit.annotate(int, torch.ones(1))", "torch.ones(1)")
    assert_good_fixed(tmp_path)
    code, out, err = run_cli("check", "nb/plain.ipynb", cwd=tmp_path)  # nothing to migrate there
    assert (code, err) == (0, "")


@pytest.mark.slow
def test_killed_apply_leaves_every_file_old_or_new(tmp_path):
    """SIGKILL `apply` while it writes many files: each file holds either its old or its new bytes."""
    n = 80
    old = {f"m{i:03d}.py": f"import torch\n\nx{i} = torch.jit.annotate(int, torch.ones({i}))\n" for i in range(n)}
    new = {name: text.replace(f"torch.jit.annotate(int, torch.ones({i}))", f"torch.ones({i})") for i, (name, text) in enumerate(old.items())}
    (tmp_path / "pyproject.toml").write_text(PINNED)
    for name, text in old.items():
        (tmp_path / name).write_text(text)
    start = {name: (tmp_path / name).stat().st_mtime_ns for name in old}
    proc = subprocess.Popen([sys.executable, "-m", "ts2export", "apply", "--jobs", "2", "."], cwd=tmp_path,
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    deadline = time.monotonic() + 600
    try:
        while time.monotonic() < deadline and proc.poll() is None:
            # kill as soon as the writing has begun
            if any((tmp_path / name).stat().st_mtime_ns != start[name] for name in list(old)[: n // 4]):
                break
            time.sleep(0.005)
        proc.send_signal(signal.SIGKILL)
    finally:
        proc.wait()
    assert proc.returncode == -signal.SIGKILL, "apply finished before it could be killed"
    states = {}
    for name in old:
        data = (tmp_path / name).read_text()
        assert data in (old[name], new[name]), f"{name} is half-written: {data!r}"
        states[name] = "new" if data == new[name] else "old"
    assert "new" in states.values() and "old" in states.values(), "killed mid-run: some files written, some not"
    # a killed run may leave its temporary files (never a .py file): the next run ignores them and
    # finishes the job
    leftovers = [p.name for p in tmp_path.iterdir() if p.name not in old and p.name != "pyproject.toml"]
    assert all(name.startswith(".m") and name.endswith(".ts2export.tmp") for name in leftovers), leftovers
    proc = subprocess.run([sys.executable, "-m", "ts2export", "apply", "--jobs", "2", "."], cwd=tmp_path,
                          capture_output=True, text=True, timeout=600)
    assert proc.returncode == 0, proc.stderr
    assert all((tmp_path / name).read_text() == new[name] for name in old)
