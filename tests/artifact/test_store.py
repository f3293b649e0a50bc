"""migrate-artifact on a model store: a generated store of 200 artifacts (tests/artifact/storegen.py)
migrated in parallel; a store of 48 with the same kinds of artifact interrupted and resumed, sharded
and merged, and on Ray; usage errors.

Each store and its reference run are shared by the file (session fixtures); the other runs are
compared with their reference's report, timings left out."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from .storegen import expected_totals, generate

# One xdist worker runs the whole file (scripts/test.sh: --dist loadgroup), so the store and the
# reference run are made once.
pytestmark = pytest.mark.xdist_group("model_store")

TS2EXPORT = [sys.executable, "-m", "ts2export"]
# The store runs: no lowering (two manifest entries ask for it), one generated input set.
RUN = ["--no-lower", "--samples", "1", "--no-progress"]


def ts2export(*args, timeout: float = 1800, env: dict | None = None) -> subprocess.CompletedProcess:
    # a bound against a hung run, not a speed check: a 200-artifact run on 2 shared cores took 600+ s
    return subprocess.run([*TS2EXPORT, *map(str, args)], capture_output=True, text=True, timeout=timeout,
                          env={**os.environ, **(env or {})})


def comparable(report: dict) -> dict:
    """The report without what differs between runs of the same store: timings, shard, pending."""
    arts = [{k: v for k, v in a.items() if k != "timings"} for a in report["artifacts"]]
    return {"store": report["store"], "options_hash": report["options_hash"], "totals": report["totals"],
            "failure_classes": report["failure_classes"], "artifacts": arts}


def assert_same_report(got: dict, want: dict) -> None:
    """Equal but for timings; on a difference, name the artifacts and fields that differ."""
    a, b = comparable(got), comparable(want)
    if a != b:
        theirs = {r["path"]: r for r in b["artifacts"]}
        diffs = [(r["path"], k, r.get(k), theirs.get(r["path"], {}).get(k)) for r in a["artifacts"]
                 for k in sorted(set(r) | set(theirs.get(r["path"], {}))) if r.get(k) != theirs.get(r["path"], {}).get(k)]
        top = {k: (a[k], b[k]) for k in a if k != "artifacts" and a[k] != b[k]}
        raise AssertionError(f"reports differ: {top} {diffs[:10]}")


def state_lines(out: Path) -> int:
    state = out / ".ts2export-state.jsonl"
    return len(state.read_text().splitlines()) if state.is_file() else 0


@pytest.fixture(scope="session")
def store(tmp_path_factory):
    root = tmp_path_factory.mktemp("store") / "models"
    planted = generate(root, 200)
    return root, planted


@pytest.fixture(scope="session")
def reference(store, tmp_path_factory):
    root, _ = store
    out = tmp_path_factory.mktemp("reference") / "out"
    t0 = time.perf_counter()
    proc = ts2export("migrate-artifact", root / "manifest.txt", "--out", out, "--jobs", "2", *RUN)
    seconds = time.perf_counter() - t0
    return out, json.loads((out / "report.json").read_text()), proc, seconds


# The runs compared with a whole run (interrupted and resumed, four shards, Ray) use a store of 32:
# every status of the 200 (migrated, failed, no inputs, the three kinds of damage, manifest inputs,
# two entries lowered), at a sixth of the cost of each run.
SMALL = 32
SMALL_DONE = 27  # 25 migrated, 1 failed, and the damaged zip whose directory still reads


@pytest.fixture(scope="session")
def small_store(tmp_path_factory):
    root = tmp_path_factory.mktemp("small_store") / "models"
    planted = generate(root, SMALL, no_inputs=3, corrupt=3)
    assert expected_totals(planted) == {"migrated": 25, "failed": 1, "no-inputs": 3, "corrupt": 3}
    return root, planted


@pytest.fixture(scope="session")
def small_reference(small_store, tmp_path_factory):
    root, planted = small_store
    out = tmp_path_factory.mktemp("small_reference") / "out"
    proc = ts2export("migrate-artifact", root / "manifest.txt", "--out", out, "--jobs", "2", *RUN)
    assert proc.returncode == 1, proc.stderr  # failures were planted
    report = json.loads((out / "report.json").read_text())
    assert report["totals"] == expected_totals(planted)
    assert state_lines(out) == SMALL_DONE
    return out, report


@pytest.mark.slow
def test_the_report_counts_what_the_generator_planted(store, reference):
    root, planted = store
    out, report, proc, seconds = reference
    assert proc.returncode == 1, proc.stderr  # failures were planted
    assert proc.stderr == ""
    assert report["totals"] == expected_totals(planted) == {"migrated": 179, "failed": 11, "no-inputs": 6, "corrupt": 4}
    by_path = {a["path"]: a for a in report["artifacts"]}
    assert [a["path"] for a in report["artifacts"]] == sorted(by_path) == [p.rel for p in planted]
    for p in planted:
        assert by_path[p.rel]["status"] == p.status, by_path[p.rel]
        assert by_path[p.rel]["inputs"] == p.inputs
    # the scripted data-dependent loop cannot be converted; the scripted `if` can (torch.cond)
    assert report["failure_classes"]["convert:data-dependent"] == 11
    assert all(a["path"].startswith("halving/") for a in report["artifacts"] if a["status"] == "failed")
    assert all(by_path[p.rel]["status"] == "migrated" for p in planted if p.rel.startswith("branchy/") and p.status != "corrupt"
               and p.inputs)
    assert {a["failure_class"] for a in report["artifacts"] if a["status"] == "corrupt"} == {"not-a-zip", "damaged"}
    import hashlib

    for a in report["artifacts"]:
        assert a["sha256"] == hashlib.sha256((root / a["path"]).read_bytes()).hexdigest()
        if a["status"] == "migrated":
            folder = out / a["output"]
            stem = Path(a["path"]).stem
            assert a["sizes"]["pt2"] == (folder / f"{stem}.pt2").stat().st_size
            assert a["sizes"]["old"] == (root / a["path"]).stat().st_size
            assert a["max_abs_error"] is not None and a["timings"]["total"] > 0
            assert (folder / "report.md").is_file()
    # two manifest entries asked for a .pte, the others did not
    lowered = [a for a in report["artifacts"] if a["sizes"].get("pte")]
    assert len(lowered) == 2 and all(a["inputs"] == "manifest" for a in lowered)
    html = (out / "report.html").read_text()
    assert "convert:data-dependent" in html and "Slowest" in html and "Largest" in html
    assert f'href="{lowered[0]["output"]}/report.md"' in html
    # originals untouched: nothing was written into the store
    assert not list(root.rglob("*.pt2")) and not list(root.rglob("report.*"))
    print(f"reference run: 200 artifacts, --jobs 2, {seconds:.1f} s")


@pytest.mark.slow
def test_a_second_run_of_an_unchanged_store_does_nothing(store, reference):
    root, _ = store
    out, report, _, _ = reference
    proc = ts2export("migrate-artifact", root / "manifest.txt", "--out", out, "--jobs", "2", *RUN)
    assert proc.returncode == 1
    # 190 runnable artifacts and one whose zip directory reads but whose CRC check fails in its worker
    assert "200 artifacts: 191 already done, 6 without inputs, 3 unreadable, 0 to migrate" in proc.stdout
    assert json.loads((out / "report.json").read_text()) == report
    assert state_lines(out) == 191


@pytest.mark.slow
def test_an_interrupted_run_does_only_what_is_left(small_store, small_reference, tmp_path):
    root, _ = small_store
    out = tmp_path / "out"
    # SIGINT as a terminal gives it: a suite started in the background (`.ci/run &`) ignores SIGINT, and
    # Python keeps an ignored SIGINT ignored, so the Ctrl-C would never arrive
    proc = subprocess.Popen([*TS2EXPORT, "migrate-artifact", str(root / "manifest.txt"), "--out", str(out), "--jobs", "2", *RUN],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                            preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL))
    deadline = time.monotonic() + 300
    while state_lines(out) < 12 and time.monotonic() < deadline and proc.poll() is None:
        time.sleep(0.05)
    proc.send_signal(signal.SIGINT)  # Ctrl-C
    stdout, stderr = proc.communicate(timeout=60)
    assert proc.returncode == 130, stderr
    assert "interrupted:" in stderr and "Traceback" not in stderr
    done = state_lines(out)
    assert 12 <= done < SMALL_DONE
    partial = json.loads((out / "report.json").read_text())
    assert partial["pending"] == SMALL_DONE - done
    again = ts2export("migrate-artifact", root / "manifest.txt", "--out", out, "--jobs", "2", *RUN)
    assert (f"{SMALL} artifacts: {done} already done, 3 without inputs, 2 unreadable, {SMALL_DONE - done} to migrate"
            in again.stdout)
    assert state_lines(out) == SMALL_DONE  # each artifact migrated once
    assert_same_report(json.loads((out / "report.json").read_text()), small_reference[1])


def test_an_interrupted_runs_report_counts_what_its_state_file_holds(small_store, small_reference, tmp_path, monkeypatch):
    """The race the interrupted run above meets only sometimes, made certain: one artifact's record
    reached the run's memory, a second one's line reached the state file just as the Ctrl-C came
    (a worker wrote it, the run never took it). The report counts both as done, as the state does,
    and the next run migrates only the rest."""
    from ts2export.artifact import storerun
    from ts2export.artifact.state import RunState
    from ts2export.artifact.store import discover, resolve_inputs

    root, _ = small_store
    out = tmp_path / "out"
    want = {a["path"]: a for a in small_reference[1]["artifacts"]}

    def record(task: dict) -> dict:  # what the whole run recorded for this task's artifact
        return dict(want[str(Path(task["path"]).relative_to(root))])

    class Interrupted:
        def run(self, todo, on_done):
            (first, task1), (second, task2) = todo[0], todo[1]
            on_done(first, {k: v for k, v in record(task1).items() if k not in ("path", "sha256", "inputs", "output")})
            RunState(out).add(second, record(task2))  # on disk, not in the run's memory
            raise KeyboardInterrupt

    monkeypatch.setattr(storerun, "_executor", lambda settings, out, device: Interrupted())
    store = discover(str(root / "manifest.txt"), exclude=out)
    resolve_inputs(store, None, (), None)
    options = {"method": [], "backend": "export", "device": "auto", "to_device": None, "samples": 1, "seed": 0,
               "reference": None, "rtol": None, "atol": None, "lower": False, "package": False}
    result = storerun.migrate_store(store, out, options, storerun.RunSettings(), lambda line: None)
    assert result.interrupted
    report = json.loads((out / "report.json").read_text())
    assert state_lines(out) == 2
    assert report["pending"] == SMALL_DONE - 2  # the report agrees with the state file
    assert sum(1 for a in report["artifacts"] if a["status"] in ("migrated", "failed")) == 2


@pytest.mark.slow
def test_four_shards_merged_equal_the_whole_run(small_store, small_reference, tmp_path):
    root, _ = small_store
    outs = [tmp_path / f"shard{k}" for k in range(1, 5)]
    seen = []
    for k, out in enumerate(outs, 1):
        proc = ts2export("migrate-artifact", root / "manifest.txt", "--out", out, "--jobs", "2", "--shard", f"{k}/4", *RUN)
        assert proc.returncode in (0, 1), proc.stderr
        shard = json.loads((out / "report.json").read_text())
        assert shard["shard"] == f"{k}/4"
        seen.append({a["path"] for a in shard["artifacts"]})
    assert sum(map(len, seen)) == SMALL and set().union(*seen) == {a["path"] for a in small_reference[1]["artifacts"]}
    assert all(2 < len(s) < 16 for s in seen)  # a spread, not one shard holding everything
    merged = ts2export("merge-reports", *outs, "-o", tmp_path / "merged")
    assert merged.returncode == 1 and f"{SMALL} artifacts from 4 report(s)" in merged.stdout
    report = json.loads((tmp_path / "merged" / "report.json").read_text())
    assert_same_report(report, small_reference[1])
    html = (tmp_path / "merged" / "report.html").read_text()
    first = next(a for a in report["artifacts"] if a["status"] == "migrated")
    owner = next(k for k, s in enumerate(seen, 1) if first["path"] in s)
    assert f'href="../shard{owner}/{first["output"]}/report.md"' in html


@pytest.mark.slow
def test_the_ray_executor_gives_the_same_report(small_store, small_reference, tmp_path):
    pytest.importorskip("ray")
    root, _ = small_store
    out = tmp_path / "out"
    env = {"RAY_ADDRESS": ""}  # a local Ray instance, two CPUs (--jobs 2)
    proc = ts2export("migrate-artifact", root / "manifest.txt", "--out", out, "--executor", "ray", "--jobs", "2", *RUN, env=env)
    assert proc.returncode == 1, proc.stderr[-2000:]
    assert_same_report(json.loads((out / "report.json").read_text()), small_reference[1])
    assert state_lines(out) == SMALL_DONE


# ---- a worker that hangs, dies or grows -----------------------------------------------------------------


def _small_store(root: Path) -> Path:
    """a.pt and z.pt (tiny MLPs) around slow.pt, whose 20,000-step scripted loop takes minutes."""
    import warnings

    import torch

    from .storegen import MLP, Slow

    root.mkdir(parents=True)
    x = torch.randn(4, 8)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        for name in ("a", "z"):
            torch.jit.trace(MLP(6).eval(), x).save(str(root / f"{name}.pt"))
        torch.jit.script(Slow()).save(str(root / "slow.pt"))
    for name in ("a", "slow", "z"):
        torch.save((x,), root / f"{name}.inputs.pt")
    return root


@pytest.mark.slow
def test_a_timeout_is_a_status_and_the_run_goes_on(tmp_path):
    root = _small_store(tmp_path / "store")
    proc = ts2export("migrate-artifact", root, "--out", tmp_path / "out", "--timeout", "10", *RUN)
    assert proc.returncode == 1, proc.stderr
    report = json.loads((tmp_path / "out" / "report.json").read_text())
    assert [(a["path"], a["status"]) for a in report["artifacts"]] == [("a.pt", "migrated"), ("slow.pt", "timeout"), ("z.pt", "migrated")]
    assert report["artifacts"][1]["error"] == "still running after 10 s; the worker was killed"


def _children(pid: int) -> list[int]:
    out = []
    for stat in Path("/proc").glob("[0-9]*/stat"):
        try:
            fields = stat.read_text().rsplit(")", 1)[1].split()
        except OSError:
            continue
        if int(fields[1]) == pid:
            out.append(int(stat.parent.name))
    return out


@pytest.mark.slow
@pytest.mark.skipif(not Path("/proc/self/stat").exists(), reason="finds the worker through /proc")
def test_a_killed_worker_is_a_crash_and_the_run_goes_on(tmp_path):
    root = _small_store(tmp_path / "store")
    out = tmp_path / "out"
    proc = subprocess.Popen([*TS2EXPORT, "migrate-artifact", str(root), "--out", str(out), *RUN],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    deadline = time.monotonic() + 120
    while state_lines(out) < 1 and time.monotonic() < deadline:
        time.sleep(0.1)
    time.sleep(1.0)  # the worker is in slow.pt now
    workers = _children(proc.pid)
    assert len(workers) == 1
    os.kill(workers[0], signal.SIGKILL)
    proc.communicate(timeout=120)
    assert proc.returncode == 1
    report = json.loads((out / "report.json").read_text())
    assert [(a["path"], a["status"]) for a in report["artifacts"]] == [("a.pt", "migrated"), ("slow.pt", "crashed"), ("z.pt", "migrated")]
    assert report["artifacts"][1]["error"] == "the worker died (signal 9)"


@pytest.mark.slow
def test_a_worker_over_max_memory_is_killed_and_reported(tmp_path):
    root = _small_store(tmp_path / "store")
    (root / "slow.pt").unlink()
    # a worker holds torch (hundreds of MiB resident): a 64 MiB bound is passed by every artifact
    proc = ts2export("migrate-artifact", root, "--out", tmp_path / "out", "--max-memory", "64M", *RUN)
    assert proc.returncode == 1
    report = json.loads((tmp_path / "out" / "report.json").read_text())
    assert {a["status"] for a in report["artifacts"]} == {"crashed"}
    assert {a["failure_class"] for a in report["artifacts"]} == {"memory"}
    assert "passed --max-memory 64 MiB" in report["artifacts"][0]["error"]


# ---- errors a user can cause: one line, exit 2 ---------------------------------------------------------------


def _one_error_line(proc: subprocess.CompletedProcess, start: str) -> None:
    assert proc.returncode == 2, proc.stdout + proc.stderr
    assert proc.stderr.startswith(f"error: {start}"), proc.stderr
    assert len(proc.stderr.splitlines()) == 1 and "Traceback" not in proc.stderr


def test_store_usage_errors_are_one_line(tmp_path):
    (tmp_path / "empty").mkdir()
    (tmp_path / "m.txt").write_text("a.pt --inputs\n")
    (tmp_path / "a.pt").write_bytes(b"x")
    (tmp_path / "n.txt").write_text("# two lines\na.pt --frobnicate 3\n")
    (tmp_path / "j.jsonl").write_text('{"path": "a.pt", "input": 3}\n')
    (tmp_path / "missing.txt").write_text("b.pt\n")
    out = tmp_path / "out"
    _one_error_line(ts2export("migrate-artifact", tmp_path / "empty", "--out", out), "no *.pt or *.ptl file under")
    _one_error_line(ts2export("migrate-artifact", f"{tmp_path}/missing/", "--out", out), f"{tmp_path}/missing/: no such directory")
    _one_error_line(ts2export("migrate-artifact", f"{tmp_path}/nothing/**/*.pt", "--out", out), "the glob")
    _one_error_line(ts2export("migrate-artifact", tmp_path / "m.txt", "--out", out), f"{tmp_path / 'm.txt'}:1: --inputs needs a value")
    _one_error_line(ts2export("migrate-artifact", tmp_path / "n.txt", "--out", out), f"{tmp_path / 'n.txt'}:2: unknown option '--frobnicate'")
    _one_error_line(ts2export("migrate-artifact", tmp_path / "j.jsonl", "--out", out), f"{tmp_path / 'j.jsonl'}:1: \"input\" is a string")
    _one_error_line(ts2export("migrate-artifact", tmp_path / "missing.txt", "--out", out), f"{tmp_path / 'missing.txt'}:1: {tmp_path / 'b.pt'}: no such file")
    _one_error_line(ts2export("migrate-artifact", tmp_path / "empty"), "a model store needs --out DIR")
    _one_error_line(ts2export("migrate-artifact", tmp_path, "--out", out, "--shard", "5/4"), "--shard '5/4': K must be between 1 and N")
    _one_error_line(ts2export("migrate-artifact", tmp_path / "a.pt", "--jobs", "4"), "--jobs: for a model store")
    _one_error_line(ts2export("merge-reports", tmp_path / "empty", "-o", out), f"{tmp_path / 'empty' / 'report.json'}: no such report")
    assert not out.exists()


def test_executor_ray_without_ray_says_how_to_install_it(tmp_path):
    blocker = tmp_path / "noray"
    blocker.mkdir()
    (blocker / "ray.py").write_text("raise ImportError('no ray here')\n")
    (tmp_path / "store").mkdir()
    (tmp_path / "store" / "a.pt").write_bytes(b"x")
    env = {"PYTHONPATH": os.pathsep.join([str(blocker), os.environ.get("PYTHONPATH", "")])}
    proc = ts2export("migrate-artifact", tmp_path / "store", "--out", tmp_path / "out", "--executor", "ray", env=env)
    assert proc.returncode == 2
    assert proc.stderr == "error: --executor ray needs ray: pip install 'ts2export[ray]'\n"


# ---- where inputs come from ----------------------------------------------------------------------------------


def test_inputs_come_from_the_manifest_then_a_sidecar_then_the_recording_then_the_command_line(tmp_path):
    from ts2export.artifact.store import discover, resolve_inputs

    for name in ("m1", "m2", "m3", "m4"):
        (tmp_path / f"{name}.pt").write_bytes(b"not loaded here")
    for name in ("m1", "m2"):
        (tmp_path / f"{name}.inputs.pt").write_bytes(b"")
    (tmp_path / "rec.pt").write_bytes(b"")
    (tmp_path / "models.txt").write_text("m1.pt --input 'float32[2,8]' --no-lower\nm2.pt\n"
                                         '{"path": "m3.pt", "method": "encode"}\nm4.pt\n')
    store = discover(str(tmp_path / "models.txt"))
    asked = []

    def recorded(entry):
        asked.append(entry.rel)
        return str(tmp_path / "rec.pt") if entry.rel != "m4.pt" else None

    resolve_inputs(store, recorded, ["int64[3]"], None)
    got = {e.rel: (e.inputs_source, e.specs, Path(e.inputs_file).name if e.inputs_file else None, e.options) for e in store.entries}
    assert got == {
        "m1.pt": ("manifest", ["float32[2,8]"], None, {"lower": False}),
        "m2.pt": ("sidecar", [], "m2.inputs.pt", {}),
        "m3.pt": ("recording", [], "rec.pt", {"method": ["encode"]}),
        "m4.pt": ("command line", ["int64[3]"], None, {}),
    }
    assert asked == ["m3.pt", "m4.pt"]  # the recording is asked only where nothing closer gave inputs


def test_directory_and_glob_stores_mirror_their_layout_and_skip_sidecars_and_the_output(tmp_path):
    from ts2export.artifact.store import discover, in_shard

    for rel in ("a/x.pt", "a/x.inputs.pt", "b/c/y.ptl", "b/z.pth", "out/a/x.pt"):
        (tmp_path / rel).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / rel).write_bytes(b"")
    store = discover(str(tmp_path), exclude=tmp_path / "out")
    assert [(e.rel, e.output) for e in store.entries] == [("a/x.pt", "a/x"), ("b/c/y.ptl", "b/c/y")]
    glob = discover(f"{tmp_path}/a/*.pt")
    assert [e.rel for e in glob.entries] == ["x.pt"] and glob.root == tmp_path / "a"
    rels = [f"m{i}/model.pt" for i in range(400)]
    shards = [[r for r in rels if in_shard(r, (k, 4))] for k in range(1, 5)]
    assert sorted(sum(shards, [])) == sorted(rels) and all(60 < len(s) < 140 for s in shards)


@pytest.mark.slow
def test_a_recording_gives_the_inputs_of_artifacts_a_program_loaded(tmp_path):
    import warnings

    import torch

    from .storegen import MLP

    store = tmp_path / "models"
    store.mkdir()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        for name in ("loaded", "unused"):
            torch.jit.script(MLP(6).eval()).save(str(store / f"{name}.pt"))
    program = tmp_path / "serve.py"
    program.write_text("import torch\nm = torch.jit.load('models/loaded.pt')\nfor b in (2, 5):\n    m(torch.randn(b, 8))\n")
    rec = subprocess.run([*TS2EXPORT, "record", "--", sys.executable, str(program)], cwd=tmp_path, capture_output=True, text=True, timeout=300)
    assert rec.returncode == 0, rec.stderr
    out = tmp_path / "out"
    proc = ts2export("migrate-artifact", store, "--out", out, "--recording", tmp_path / "ts2export-recording.json", *RUN)
    assert proc.returncode == 1, proc.stderr  # one artifact has no inputs
    report = json.loads((out / "report.json").read_text())
    assert [(a["path"], a["status"], a["inputs"]) for a in report["artifacts"]] == [
        ("loaded.pt", "migrated", "recording"), ("unused.pt", "no-inputs", None)]
    assert (out / "loaded" / "recorded.inputs.pt").is_file()
    bad = ts2export("migrate-artifact", store, "--out", out, "--recording", tmp_path / "serve.py")
    _one_error_line(bad, f"{tmp_path / 'serve.py'}: not a readable recording")


def test_ray_asks_a_gpu_only_for_artifacts_that_need_one(tmp_path):
    import warnings

    import torch

    from ts2export.artifact.executors import needs_accelerator

    from .storegen import MLP

    path = tmp_path / "cpu.pt"
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        torch.jit.trace(MLP(6).eval(), torch.randn(2, 8)).save(str(path))
    assert needs_accelerator(str(path), "auto") is False  # weights on cpu, no device pinned in the graph
    assert needs_accelerator(str(path), "cpu") is False
    assert needs_accelerator(str(path), "cuda:0") is True  # --device names an accelerator
    (tmp_path / "bad.pt").write_bytes(b"x")
    assert needs_accelerator(str(tmp_path / "bad.pt"), "auto") is False  # its task reports the load error


@pytest.mark.slow
def test_the_html_report_renders_in_headless_chromium(reference, tmp_path):
    from tests.test_report import find_chromium, run_chromium

    chromium = find_chromium()
    if chromium is None:  # .ci/run installs Debian's chromium; only a machine without it skips
        pytest.skip("chromium is not installed (apt-get install chromium)")
    out, report, _, _ = reference
    page = out / "report.html"

    def chrome(*args: str) -> subprocess.CompletedProcess:
        return run_chromium(chromium, tmp_path, page, *args)

    # The DOM the browser built: the totals by status and failure class, and one row per artifact
    # whose link opens that artifact's own report.
    dom = chrome("--dump-dom")
    assert dom.returncode == 0, dom.stderr[-2000:]
    import re

    for status, n in report["totals"].items():
        assert re.search(rf"<td[^>]*>{re.escape(status)}</td><td[^>]*>{n}</td>", dom.stdout), (status, n)
    links = re.findall(r'<a href="([^"]+/report\.md)"', dom.stdout)
    migrated = [a for a in report["artifacts"] if a["status"] == "migrated"]
    assert len(set(links)) >= len(migrated) and all((out / link).is_file() for link in links)
    # and it is drawn: a screenshot of the page is not blank
    shot = tmp_path / "store-report.png"
    run = chrome("--window-size=1200,1600", f"--screenshot={shot}")
    assert run.returncode == 0 and shot.is_file(), run.stderr[-2000:]
    from PIL import Image

    with Image.open(shot) as image:
        colours = image.convert("RGB").getcolors(maxcolors=1 << 20)
    assert len(colours) > 20  # text and table rules: a rendered page, not an empty one
