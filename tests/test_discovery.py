import os
from pathlib import Path

import pytest

from ts2export.engine.discovery import DiscoveryError, discover


def names(files, root):
    return [Path(f.path).resolve().relative_to(root.resolve()).as_posix() for f in files]


def test_gitignore_nested_excludes_venvs_and_builds(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    for rel in [
        "a.py", "b.cpp", "readme.md", "gen/out.py", "sub/keep.py", "sub/skip_me.py", "sub/deep/x.py",
        "build/old.py", "dist/d.py", ".venv/lib/v.py", "myenv/lib/site.py", "node_modules/n.py",
        "lib/site-packages/s.py", "sub/deep/local.py", "vendor/v.py",
    ]:
        (tmp_path / rel).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / rel).write_text("x = 1\n")
    (tmp_path / "myenv" / "pyvenv.cfg").write_text("home = /usr\n")
    (tmp_path / ".gitignore").write_text("gen/\n")
    (tmp_path / "sub" / ".gitignore").write_text("skip_me.py\n")
    (tmp_path / "sub" / "deep" / ".gitignore").write_text("local.py\n")
    files = discover([Path(".")], tmp_path, excludes=["vendor/"])
    assert names(files, tmp_path) == ["a.py", "b.cpp", "sub/deep/x.py", "sub/keep.py"]
    assert {f.kind for f in files} == {"python", "cpp"}
    # A file given by name is always checked, and a deep folder still honours .gitignore above it.
    assert names(discover([Path("sub/skip_me.py")], tmp_path), tmp_path) == ["sub/skip_me.py"]
    assert names(discover([Path("sub")], tmp_path), tmp_path) == ["sub/deep/x.py", "sub/keep.py"]


def test_symlink_loop_is_not_followed_forever(tmp_path):
    (tmp_path / "pkg").mkdir()
    (tmp_path / "pkg" / "m.py").write_text("x = 1\n")
    os.symlink(tmp_path, tmp_path / "pkg" / "loop")
    files = discover([tmp_path], tmp_path)
    assert names(files, tmp_path) == ["pkg/m.py"]


def test_missing_path_raises(tmp_path):
    with pytest.raises(DiscoveryError, match="no such file or folder"):
        discover([tmp_path / "nope"], tmp_path)
