"""The result cache (ts2export.engine.cache): the same findings with and without it, with 1 and 2 jobs;
a change in any file of the run (one that only another file's findings depend on included) is
seen; a corrupt or planted entry is ignored; --no-cache and TS2EXPORT_NO_CACHE bypass it;
concurrent runs leave it readable."""

from __future__ import annotations

import json
import os
import pickle
import subprocess
import sys
from pathlib import Path

import pytest

from ts2export.engine import cache
from ts2export.cli import _configure
from ts2export.engine import analyze
from ts2export.ci.output import to_json

ROOT = Path(__file__).resolve().parent.parent
CORPUS = sorted(p for p in (ROOT / "corpus").glob("*/*/before") if p.is_dir())


def configured(path: Path, unsafe: bool = False):
    tasks, options, _ = _configure([str(path)], None, None, None, None, "unsafe" if unsafe else "safe")
    return tasks, options


def report(run) -> dict:
    """Everything a command prints of a run: findings (held back, units), errors, notes, artifacts."""
    doc = json.loads(to_json(run.results, run.program))
    doc["files"] = [(r.path, r.error, r.notes, r.suppressed, [f.to_dict() for f in r.fixed], r.new) for r in run.results]
    return doc


def cached(tasks, options, folder: Path, jobs: int = 1):
    """A run through the cache, and whether it was computed (a miss) or read back (a hit)."""
    computed = []

    def compute():
        computed.append(True)
        return analyze(tasks, options, jobs)

    return cache.cached_run(tasks, options, folder, compute), bool(computed)


def must_hit():
    raise AssertionError("the run was computed again: expected a cache hit")


def entries(folder: Path) -> list[Path]:
    return sorted(folder.glob("run-*.pickle"))


WRITER = '''import torch
from torch import nn

ARTIFACT = "{name}"


class Net(nn.Module):
    def forward(self, x):
        return x.relu()


def deploy():
    traced = torch.jit.trace(Net(), torch.randn(2, 3))
    torch.jit.save(traced, ARTIFACT)
'''
READER = '''import torch


class Service:
    def __init__(self):
        self.model = torch.jit.load("model.pt", map_location="cpu")

    def __call__(self, x):
        return self.model(x)
'''
HELPERS = '''import torch
from typing import List


@torch.jit.script
def total(xs: List[torch.Tensor]) -> torch.Tensor:
    acc = torch.jit.annotate(List[torch.Tensor], [])
    for x in xs:
        acc.append(x)
    return torch.stack(acc).sum(0)


@torch.jit.unused
def debug(x):
    return x  # ts2export: ignore[TSX101]
'''


def make_tree(root: Path, artifact: str = "model.pt") -> Path:
    (root / "app").mkdir(parents=True)
    (root / "app" / "deploy.py").write_text(WRITER.format(name=artifact))
    (root / "app" / "serve.py").write_text(READER)
    (root / "app" / "helpers.py").write_text(HELPERS)
    (root / "app" / "plain.py").write_text("import torch\nprint(torch.ones(1))\n")
    for i in range(4):  # enough files for a process pool
        (root / "app" / f"extra{i}.py").write_text(f"import torch\n\nv{i} = torch.jit.annotate(int, {i})\n")
    (root / "app" / "notes.cpp").write_text('auto m = torch::jit::load("model.pt");\n')
    return root / "app"


@pytest.mark.slow
@pytest.mark.parametrize("case", CORPUS, ids=lambda p: "/".join(p.parts[-3:-1]))
def test_corpus_findings_are_the_same_with_and_without_the_cache(case, tmp_path):
    tasks, options = configured(case)
    plain = report(analyze(tasks, options, 1))
    cold, computed = cached(tasks, options, tmp_path)
    assert computed and report(cold) == plain
    warm = cache.cached_run(tasks, options, tmp_path, must_hit)
    assert report(warm) == plain


@pytest.mark.parametrize("unsafe", [False, True])
def test_tree_findings_are_the_same_with_and_without_the_cache_and_with_1_or_2_jobs(tmp_path, unsafe):
    app = make_tree(tmp_path / "tree")
    tasks, options = configured(app, unsafe)
    plain = report(analyze(tasks, options, 1))
    assert len(plain["findings"]) >= 8 and plain["artifacts"]
    assert report(analyze(tasks, options, 2)) == plain
    cold, computed = cached(tasks, options, tmp_path / "c", jobs=2)
    assert computed and report(cold) == plain
    assert report(cache.cached_run(tasks, options, tmp_path / "c", must_hit)) == plain


def test_a_change_in_the_writer_invalidates_the_readers_findings(tmp_path):
    """serve.py does not change; its finding depends on deploy.py writing what it reads."""
    app = make_tree(tmp_path / "tree")
    tasks, options = configured(app, unsafe=True)
    linked, _ = cached(tasks, options, tmp_path / "c")
    (app / "deploy.py").write_text(WRITER.format(name="elsewhere.pt"))
    tasks, options = configured(app, unsafe=True)
    unlinked, computed = cached(tasks, options, tmp_path / "c")
    assert computed
    assert report(unlinked) == report(analyze(tasks, options, 1))

    def reader(run):
        return next(f for r in run.results if r.path.endswith("serve.py") for f in r.findings)

    assert reader(linked).held is None and "no checked file writes" in reader(unlinked).held
    # back as it was: the first entry is still there and read back
    (app / "deploy.py").write_text(WRITER.format(name="model.pt"))
    tasks, options = configured(app, unsafe=True)
    assert report(cache.cached_run(tasks, options, tmp_path / "c", must_hit)) == report(linked)


@pytest.mark.parametrize("change", ["edit", "add", "remove", "options"])
def test_any_change_of_the_run_is_another_key(tmp_path, change):
    app = make_tree(tmp_path / "tree")
    tasks, options = configured(app)
    cached(tasks, options, tmp_path / "c")
    unsafe = False
    if change == "edit":
        (app / "plain.py").write_text("import torch\nx = torch.jit.annotate(int, 1)\n")
    elif change == "add":
        (app / "new.py").write_text("import torch\n")
    elif change == "remove":
        (app / "extra0.py").unlink()
    else:
        unsafe = True
    tasks, options = configured(app, unsafe)
    run, computed = cached(tasks, options, tmp_path / "c")
    assert computed
    assert report(run) == report(analyze(tasks, options, 1))


def test_a_corrupt_or_foreign_entry_is_ignored(tmp_path):
    app = make_tree(tmp_path / "tree")
    tasks, options = configured(app)
    plain = report(analyze(tasks, options, 1))
    cached(tasks, options, tmp_path / "c")
    [entry] = entries(tmp_path / "c")
    entry.write_bytes(entry.read_bytes()[:100])  # truncated
    run, computed = cached(tasks, options, tmp_path / "c")
    assert computed and report(run) == plain
    key = cache.run_key(tasks, options)
    entry.write_bytes(pickle.dumps((key, os.system)))  # would name a function: not a result class
    run, computed = cached(tasks, options, tmp_path / "c")
    assert computed and report(run) == plain
    entry.write_bytes(pickle.dumps(("another key", run)))
    run, computed = cached(tasks, options, tmp_path / "c")
    assert computed and report(run) == plain
    assert report(cache.cached_run(tasks, options, tmp_path / "c", must_hit)) == plain


def test_entries_are_bounded(tmp_path):
    app = make_tree(tmp_path / "tree")
    for i in range(cache.KEEP + 3):
        (app / "plain.py").write_text(f"import torch\nprint({i})\n")
        cached(*configured(app), tmp_path / "c")
    assert len(entries(tmp_path / "c")) == cache.KEEP


def test_cli_reads_the_cache_and_no_cache_bypasses_it(tmp_path, run_cli, monkeypatch):
    """A planted entry under the run's key is what `check` reports; --no-cache and
    TS2EXPORT_NO_CACHE=1 report the files themselves."""
    folder = tmp_path / "c"
    monkeypatch.setenv("TS2EXPORT_CACHE_DIR", str(folder))
    app = make_tree(tmp_path / "tree")
    code, out, err = run_cli("check", "--no-progress", "--format", "json", ".", cwd=app)
    assert code == 1, err
    real = json.loads(out)["findings"]
    assert real and len(entries(folder)) == 1
    [entry] = entries(folder)
    key, run = pickle.loads(entry.read_bytes())
    for r in run.results:
        r.findings = []
    entry.write_bytes(pickle.dumps((key, run)))
    code, out, err = run_cli("check", "--no-progress", "--format", "json", ".", cwd=app)
    assert code == 0 and json.loads(out)["findings"] == []  # read back: nothing was parsed
    code, out, err = run_cli("check", "--no-cache", "--no-progress", "--format", "json", ".", cwd=app)
    assert code == 1 and json.loads(out)["findings"] == real
    code, out, err = run_cli("scan", "--no-cache", "--no-progress", "--format", "json", ".", cwd=app)
    assert json.loads(out)["findings"] == real
    code, out, err = run_cli("diff", "--no-cache", ".", cwd=app)
    assert code == 1 and out.startswith("--- a/")
    monkeypatch.setenv("TS2EXPORT_NO_CACHE", "1")
    code, out, err = run_cli("check", "--no-progress", "--format", "json", ".", cwd=app)
    assert code == 1 and json.loads(out)["findings"] == real


def test_cli_diff_and_scan_through_the_cache_match_without_it(tmp_path, run_cli):
    app = make_tree(tmp_path / "tree")
    for command in (["diff"], ["scan", "--format", "json"], ["check", "--format", "json"], ["diff", "--unsafe-fixes"]):
        without = run_cli(*command, "--no-cache", ".", cwd=app)
        cold = run_cli(*command, ".", cwd=app)
        warm = run_cli(*command, ".", cwd=app)
        assert cold == without and warm == without, command


def test_concurrent_runs_leave_the_cache_readable(tmp_path, monkeypatch):
    app = make_tree(tmp_path / "tree")
    env = dict(os.environ, TS2EXPORT_CACHE_DIR=str(tmp_path / "c"))
    command = [sys.executable, "-m", "ts2export", "check", "--no-progress", "--format", "json", "-j", "1", "."]
    outputs = []
    for _round in range(2):
        procs = [subprocess.Popen(command, cwd=app, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
                 for _ in range(3)]
        for p in procs:
            out, err = p.communicate(timeout=300)
            assert p.returncode == 1, err.decode()
            outputs.append(out)
    assert len(set(outputs)) == 1
    assert [p.name for p in (tmp_path / "c").iterdir() if p.name.startswith(".tmp-")] == []
    monkeypatch.chdir(app)
    tasks, options = configured(Path("."))  # the paths as the runs named them
    assert report(cache.cached_run(tasks, options, tmp_path / "c", must_hit)) == report(analyze(tasks, options, 1))


def _plain_tree(root: Path) -> Path:
    """A package without TorchScript (but with words the pre-filter lets through): nothing to find."""
    root.mkdir(parents=True)
    (root / "model.py").write_text("import torch\nfrom torch import nn\n\n\nclass Net(nn.Module):\n"
                                   "    def forward(self, x):\n        return x.relu()  # no jit here\n")
    (root / "train.py").write_text("import torch\nfrom model import Net\n\nprint(Net()(torch.ones(2)))\n")
    return root


def test_a_run_that_found_nothing_is_the_run_of_every_fix_mode(tmp_path):
    """The first pass does not depend on the fix mode: a run that found nothing in any file is read
    back for `apply` and `diff` in any mode; a run that found something is not."""
    from dataclasses import replace

    plain = _plain_tree(tmp_path / "plain")
    tasks, options = configured(plain)
    scanned, computed = cached(tasks, options, tmp_path / "c")
    assert computed and not any(r.findings or r.error for r in scanned.results)
    for fix in ("safe", "unsafe"):
        moded = replace(options, fix=fix)
        assert report(cache.cached_run(tasks, moded, tmp_path / "c", must_hit)) == report(analyze(tasks, moded, 1))
    app = make_tree(tmp_path / "tree")
    tasks, options = configured(app)
    cached(tasks, options, tmp_path / "c2")
    run, computed = cached(tasks, replace(options, fix="unsafe"), tmp_path / "c2")
    assert computed and any(r.changed for r in run.results)


def test_cli_apply_through_the_cache_writes_what_apply_without_it_writes(tmp_path, run_cli, monkeypatch):
    """`diff` then `apply`: the apply reads the diff's run back (a hit) and writes the same files,
    with the same output, as `apply --no-cache` on a copy; a second apply sees the changed files."""
    import shutil

    monkeypatch.setenv("TS2EXPORT_CACHE_DIR", str(tmp_path / "c"))
    app = make_tree(tmp_path / "a")
    other = tmp_path / "b" / "app"
    shutil.copytree(app, other)
    assert run_cli("diff", "--unsafe-fixes", "--no-progress", ".", cwd=app)[0] == 1
    assert len(entries(tmp_path / "c")) == 1
    import ts2export.cli

    computing = ts2export.cli._with_progress
    monkeypatch.setattr(ts2export.cli, "_with_progress", lambda *a, **k: must_hit())
    cached_apply = run_cli("apply", "--unsafe-fixes", "--no-progress", ".", cwd=app)  # read back, not computed
    monkeypatch.setattr(ts2export.cli, "_with_progress", computing)
    assert (app / "extra0.py").read_text() != "import torch\n\nv0 = torch.jit.annotate(int, 0)\n"  # written
    plain_apply = run_cli("apply", "--unsafe-fixes", "--no-cache", "--no-progress", ".", cwd=other)
    assert cached_apply == plain_apply
    files = sorted(p.relative_to(app).as_posix() for p in app.rglob("*") if p.is_file())
    assert files == sorted(p.relative_to(other).as_posix() for p in other.rglob("*") if p.is_file())
    assert all((app / f).read_bytes() == (other / f).read_bytes() for f in files)
    again = run_cli("apply", "--unsafe-fixes", "--no-progress", ".", cwd=app)
    assert again == run_cli("apply", "--unsafe-fixes", "--no-cache", "--no-progress", ".", cwd=other)
    assert len(entries(tmp_path / "c")) == 2  # the changed files are another key


WARM_PROBE = """
import sys
from ts2export.cli import main

sys.argv = ["ts2export", "check", ".", "--no-progress"]
try:
    main()
except SystemExit:
    pass
print("LOADED", sorted(m for m in sys.modules if m == "libcst" or m.startswith(("ts2export.rules", "ts2export.engine.check",
                                                                                  "ts2export.model.program"))))
"""


def test_a_run_read_back_from_the_cache_imports_neither_libcst_nor_the_rules(tmp_path):
    """The warm path (a CI gate on an unchanged tree, an editor's save): the cache's key and its
    results are read without libcst, the rules or the program model (each import costs a warm run
    a fifth of a second or more; docs/speed.md)."""
    (tmp_path / "m.py").write_text("import torch\nx = torch.jit.annotate(int, torch.ones(1))\n")
    env = {**os.environ, "TS2EXPORT_CACHE_DIR": str(tmp_path / "cache")}
    env.pop("TS2EXPORT_NO_CACHE", None)

    def probe() -> tuple[str, str]:
        proc = subprocess.run([sys.executable, "-c", WARM_PROBE], cwd=tmp_path, capture_output=True, text=True,
                              timeout=120, env=env)
        loaded = next(line for line in proc.stdout.splitlines() if line.startswith("LOADED"))
        return proc.stdout.replace(loaded, ""), loaded

    cold_out, cold = probe()
    warm_out, warm = probe()
    assert "TSX201" in cold_out and warm_out == cold_out
    assert "'libcst'" in cold and "ts2export.engine.check" in cold  # the first run checked the file
    assert warm == "LOADED []", warm
