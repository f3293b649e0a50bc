"""`ts2export record -- CMD` on small programs written here, and the recording read back.

Each program runs for real in a child process (torch imported there), so these tests are slow.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest
import torch

from ts2export.record.recording import RecordingError, load_recording, write_verify_inputs

pytestmark = pytest.mark.slow

MODEL = '''
import torch


class Tagger(torch.nn.Module):
    """Embedding + linear, scaled per feature: inputs ids (B, S) long, mask (B, S), scale (4,)."""

    def __init__(self):
        super().__init__()
        self.emb = torch.nn.Embedding(100, 8)
        self.out = torch.nn.Linear(8, 4)

    def forward(self, ids, mask, scale):
        return self.out(self.emb(ids)) * mask.unsqueeze(-1) * scale


def build():
    torch.manual_seed(0)
    return Tagger().eval()
'''


def write(tmp_path: Path, name: str, text: str) -> Path:
    path = tmp_path / name
    path.write_text(textwrap.dedent(text).lstrip(), encoding="utf-8")
    return path


def line_of(path: Path, needle: str) -> int:
    return next(i for i, line in enumerate(path.read_text().splitlines(), 1) if needle in line)


def record(tmp_path: Path, *cmd: str, out: str = "rec.json", quiet: bool = True, samples: bool = False, **kw) -> subprocess.CompletedProcess:
    """Run `ts2export record`; without `samples` none are kept (the recorder then never imports torch)."""
    args = [sys.executable, "-m", "ts2export", "record", "-o", out] + (["-q"] if quiet else []) + ([] if samples else ["--samples", "0"])
    args += ["--", *cmd]
    return subprocess.run(args, cwd=tmp_path, capture_output=True, timeout=300, **kw)


def site(rec, kind: str) -> dict:
    (found,) = [s for s in rec.sites if s["kind"] == kind]
    return found


# ---- scripting a module served at several batch sizes and sequence lengths ------------------------------


SERVE = '''
import torch
from model import build

model = torch.jit.script(build())
torch.manual_seed(1)
for batch in (1, 4, 8):
    for seq in (5, 7):
        ids = torch.randint(0, 100, (batch, seq))
        out = model(ids, torch.ones(batch, seq), torch.full((4,), 0.5))
print("served", out.shape[0])
'''


@pytest.fixture(scope="module")
def served(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("served")
    write(tmp, "model.py", MODEL)
    prog = write(tmp, "serve.py", SERVE)
    proc = record(tmp, sys.executable, "serve.py", samples=True)
    assert proc.returncode == 0, proc.stderr.decode()
    return tmp, prog, load_recording(tmp / "rec.json")


def test_script_site_records_every_call_with_its_dims(served):
    tmp, prog, rec = served
    s = site(rec, "script")
    assert s["path"] == "serve.py" and s["line"] == line_of(prog, "torch.jit.script(") and s["target"] == "Tagger"
    m = s["methods"]["forward"]
    assert m["calls"] == 6 and m["arg_names"] == ["ids", "mask", "scale"]
    (v,) = m["variants"]
    ids, mask, scale = v["tensors"]
    assert (ids["dtype"], mask["dtype"], scale["dtype"]) == ("int64", "float32", "float32")
    assert ids["dims"][0] == {"min": 1, "max": 8, "sizes": [1, 4, 8], "more_sizes": False}
    assert ids["dims"][1]["sizes"] == [5, 7] and mask["dims"] == ids["dims"]
    assert scale["dims"] == [{"min": 4, "max": 4, "sizes": [4], "more_sizes": False}]
    assert 0 <= ids["values"][0] <= ids["values"][1] <= 99 and scale["values"] is None
    assert sorted(map(sorted, v["classes"])) == [[[0, 0], [1, 0]], [[0, 1], [1, 1]], [[2, 0]]]
    assert len(v["shapes"]) == 6 and all(n == 1 for _, n in v["shapes"])
    assert rec.data["exit_code"] == 0 and rec.data["processes"] == 1 and rec.data["recorder_errors"] == 0


def test_reading_api_gives_example_code_and_exactly_the_varying_dims(served):
    tmp, prog, rec = served
    inputs = rec.inputs_at("serve.py", line_of(prog, "torch.jit.script("))
    assert inputs is not None and inputs.calls == 6
    assert [(d.name, d.min, d.max) for d in inputs.dims] == [("ids_dim0", 1, 8), ("ids_dim1", 5, 7)]
    assert sorted(inputs.varying) == [("ids", 0), ("ids", 1), ("mask", 0), ("mask", 1)]
    assert inputs.dynamic_shapes_code == "({0: ids_dim0, 1: ids_dim1}, {0: ids_dim0, 1: ids_dim1}, None)"
    assert inputs.dim_definitions() == [
        'ids_dim0 = torch.export.Dim("ids_dim0", max=64)',
        'ids_dim1 = torch.export.Dim("ids_dim1", max=64)',
    ]
    args, kwargs = inputs.example()
    assert kwargs == {} and inputs.kwargs_code is None
    ids, mask, scale = args
    assert ids.dtype == torch.long and mask.dtype == torch.float32 and scale.shape == (4,)
    assert ids.shape == mask.shape and ids.shape[0] in (4, 8) and ids.shape[1] in (5, 7)
    assert ids.shape[0] != ids.shape[1]
    assert inputs.args_code.startswith("(torch.zeros(") and "dtype=torch.long" in inputs.args_code
    plain = inputs.as_dict()
    assert json.loads(json.dumps(plain)) == plain and plain["dims"][0]["members"] == [["ids", 0], ["mask", 0]]
    assert plain["dynamic_shapes_code"] == inputs.dynamic_shapes_code and plain["calls"] == 6
    # the absolute path and a root finds the same site; another line finds none
    assert rec.inputs_at(str(prog), line_of(prog, "torch.jit.script(")).calls == 6
    assert rec.inputs_at("serve.py", 1, root=tmp) is None


HEAD_CALLS = '''
import torch


class Head(torch.nn.Module):
    def forward(self, x: torch.Tensor, pre_logits: bool, scale: float) -> torch.Tensor:
        return x if pre_logits else x * scale


head = torch.jit.script(Head())
x = torch.ones(2, 3)
head(x, True, 2.0)
head(x, False, 2.0)
head(torch.ones(2, 3, dtype=torch.long), True, 2.0)
'''


def test_recorded_inputs_say_when_one_program_cannot_serve_the_calls(served, tmp_path):
    """An export fixes a bool, number or string input to its example's value and takes one input
    structure and dtype per input: the recorded inputs say why one program cannot serve calls that
    differ there (what `apply --recording` holds on, with or without a proof)."""
    _, prog, rec = served
    assert rec.inputs_at("serve.py", line_of(prog, "torch.jit.script(")).problem is None
    prog = write(tmp_path, "head.py", HEAD_CALLS)
    proc = record(tmp_path, sys.executable, "head.py")
    assert proc.returncode == 0, proc.stderr.decode()
    inputs = load_recording(tmp_path / "rec.json").inputs_at("head.py", line_of(prog, "torch.jit.script("))
    assert inputs.calls == 3 and inputs.args_code.endswith("True, 2.0)")
    assert "1 other input structure(s) or dtype(s) (1 call(s))" in inputs.problem
    two = load_recording(tmp_path / "rec.json")
    from ts2export.record.hooks.variants import example_of, empty_method, merge_method, positional_variants

    stats = empty_method()
    merge_method(stats, site(two, "script")["methods"]["forward"])
    positional_variants(stats)
    ex = example_of(stats)
    assert ex.varied_constants == [("pre_logits", [True, False], False)]
    said = ex.constants_problem("forward")
    assert "`pre_logits` took True, False" in said and "scale" not in said


def test_recorded_spec_exports_dynamic_in_exactly_the_varying_dims(served):
    tmp, prog, rec = served
    sys.path.insert(0, str(tmp))
    try:
        from model import build
    finally:
        sys.path.remove(str(tmp))
    inputs = rec.inputs_at("serve.py", line_of(prog, "torch.jit.script("))
    eager = build()
    args, _ = inputs.example()
    ep = torch.export.export(eager, args, dynamic_shapes=inputs.dynamic_shapes())
    ranges = sorted((int(r.lower), int(r.upper)) for r in ep.range_constraints.values())
    # wider than the sizes seen (1..8, 5..7), as the static path writes: a size the run did not
    # show (TorchScript took any) is not refused
    assert ranges == [(0, 64), (0, 64)]
    for batch in (1, 4, 8, 16):
        for seq in (3, 5, 7, 9):
            x = (torch.randint(0, 100, (batch, seq)), torch.ones(batch, seq), torch.full((4,), 0.5))
            torch.testing.assert_close(ep.module()(*x), eager(*x))
    with pytest.raises(Exception):
        ep.module()(torch.zeros(2, 5, dtype=torch.long), torch.ones(2, 5), torch.ones(5))  # scale stays static


def test_samples_are_real_inputs_and_become_a_verify_inputs_file(served, tmp_path):
    tmp, prog, rec = served
    from ts2export.artifact.inputs import load_inputs_file

    inputs = rec.inputs_at("serve.py", line_of(prog, "torch.jit.script("))
    assert 1 <= len(inputs.samples) <= 3
    assert rec.samples_file == tmp / "rec.samples.zip" and rec.samples_file.exists()
    args, kwargs = rec.sample(inputs.samples[0]["key"])
    assert kwargs == {} and [list(t.shape) for t in args] == inputs.samples[0]["shapes"]
    assert torch.equal(args[2], torch.full((4,), 0.5)) and args[0].dtype == torch.long
    out = write_verify_inputs(inputs, tmp_path / "inputs.pt")
    loaded = load_inputs_file(out)
    assert all(torch.equal(a, b) for a, b in zip(loaded, args))
    with pytest.raises(RecordingError):
        write_verify_inputs(inputs, tmp_path / "x.pt", index=7)


# ---- tracing and saving, then loading from a path --------------------------------------------------------


TRACE = '''
import torch
from model import build

traced = torch.jit.trace(build(), (torch.zeros(2, 6, dtype=torch.long), torch.ones(2, 6), torch.ones(4)))
traced.save("tagger.pt")
'''

LOAD = '''
import sys
import torch

import trace  # writes tagger.pt

loaded = torch.jit.load(sys.argv[1])
y = loaded(torch.randint(3, 50, (3, 6)), torch.ones(3, 6), torch.ones(4))
y = loaded(torch.randint(3, 50, (5, 6)), mask=torch.ones(5, 6), scale=torch.ones(4))  # by keyword
print(tuple(y.shape))
'''


def test_trace_save_then_load_are_linked_by_the_artifact_path(tmp_path):
    write(tmp_path, "model.py", MODEL)
    write(tmp_path, "trace.py", TRACE)
    write(tmp_path, "serve.py", LOAD)
    proc = record(tmp_path, sys.executable, "serve.py", "tagger.pt")
    assert proc.returncode == 0, proc.stderr.decode()
    assert proc.stdout.decode() == "(5, 6, 4)\n"
    rec = load_recording(tmp_path / "rec.json")
    traced, loaded = site(rec, "trace"), site(rec, "load")
    assert traced["saved"] == [str(tmp_path / "tagger.pt")] and traced["methods"]["forward"]["trace_examples"] == 1
    assert loaded["artifacts"] == [str(tmp_path / "tagger.pt")] and loaded["methods"]["forward"]["calls"] == 2
    assert rec.artifacts[0]["path"] == "tagger.pt"
    assert rec.artifacts[0]["saved_by"] == [traced["id"]] and rec.artifacts[0]["loaded_by"] == [loaded["id"]]
    inputs = rec.inputs_for_artifact("tagger.pt")
    assert inputs.calls == 3 and set(inputs.sites) == {traced["id"], loaded["id"]}
    assert [(d.name, d.min, d.max) for d in inputs.dims] == [("ids_dim0", 2, 5)]
    assert inputs.dynamic_shapes_code == "({0: ids_dim0}, {0: ids_dim0}, None)"
    ids = inputs.variant["tensors"][0]
    assert ids["values"][0] == 0 and ids["values"][1] <= 49  # the trace example held zeros
    only_loaded = rec.inputs_at("serve.py", line_of(tmp_path / "serve.py", "torch.jit.load("))
    assert len(loaded["methods"]["forward"]["variants"]) == 2  # positional and keyword calls...
    assert only_loaded.calls == 2 and only_loaded.notes == [] and only_loaded.kwargs_code is None  # ...are one
    assert [(d.min, d.max) for d in only_loaded.dims] == [(3, 5)]
    lo, hi = only_loaded.variant["tensors"][0]["values"]  # ids were drawn from 3..49: the example stays in range
    assert 3 <= lo <= hi <= 49 and only_loaded.args_code.startswith(f"(torch.full((3, 6), {lo}, dtype=torch.long), ")
    assert rec.inputs_for_artifact("other.pt") is None


# ---- failing, killed and interrupted programs ---------------------------------------------------------------


FAILS = '''
import sys
import torch

f = torch.jit.script(torch.nn.Linear(3, 2))
for n in (1, 2, 3):
    f(torch.ones(n, 3))
print("failing now", file=sys.stderr)
sys.exit(3)
'''


def test_a_failing_program_keeps_its_exit_code_and_the_recording_is_written(tmp_path):
    write(tmp_path, "fails.py", FAILS)
    proc = record(tmp_path, sys.executable, "fails.py", quiet=False)
    assert proc.returncode == 3
    err = proc.stderr.decode()
    # what the program writes alone comes first, unchanged (torch 2.14 adds its own FutureWarning there)
    alone = subprocess.run([sys.executable, "fails.py"], cwd=tmp_path, capture_output=True).stderr.decode()
    assert alone.endswith("failing now\n") and err.startswith(alone)
    assert "ts2export record: wrote rec.json (1 call site, 3 calls; 1 process" in err
    rec = load_recording(tmp_path / "rec.json")
    assert rec.data["exit_code"] == 3
    (v,) = site(rec, "script")["methods"]["forward"]["variants"]
    assert v["calls"] == 3 and v["tensors"][0]["dims"][0]["sizes"] == [1, 2, 3]


KILLED = '''
import os
import signal
import sys
import time
import torch

f = torch.jit.script(torch.nn.Linear(3, 2))
for n in (2, 3, 4, 5):
    f(torch.ones(n, 3))
if sys.argv[1] == "self":
    os.kill(os.getpid(), signal.SIGTERM)
open("ready", "w").close()
time.sleep(120)
'''


def test_a_program_killed_by_sigterm_is_recorded_up_to_its_last_call(tmp_path):
    write(tmp_path, "killed.py", KILLED)
    proc = record(tmp_path, sys.executable, "killed.py", "self")
    assert proc.returncode == 128 + signal.SIGTERM
    rec = load_recording(tmp_path / "rec.json")
    assert site(rec, "script")["methods"]["forward"]["calls"] == 4
    assert rec.data["exit_code"] == 128 + signal.SIGTERM


def test_sigterm_to_the_recorder_is_forwarded_and_the_recording_written(tmp_path):
    write(tmp_path, "killed.py", KILLED)
    args = [sys.executable, "-m", "ts2export", "record", "-q", "--samples", "0", "-o", "rec.json", "--", sys.executable, "killed.py", "wait"]
    proc = subprocess.Popen(args, cwd=tmp_path, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    try:
        deadline = time.monotonic() + 240
        while not (tmp_path / "ready").exists():
            assert proc.poll() is None and time.monotonic() < deadline, proc.communicate()
            time.sleep(0.1)
        proc.send_signal(signal.SIGTERM)
        proc.wait(timeout=120)
    finally:
        if proc.poll() is None:
            proc.kill()
    assert proc.returncode == 128 + signal.SIGTERM
    rec = load_recording(tmp_path / "rec.json")
    assert site(rec, "script")["methods"]["forward"]["calls"] == 4


# ---- forked workers -------------------------------------------------------------------------------------------


WORKERS = '''
import multiprocessing as mp
import torch

torch.set_num_threads(1)
f = torch.jit.script(torch.nn.Linear(3, 2))


def work(n):
    return f(torch.ones(n, 3)).shape[0]


def child(n):
    work(n)
    work(n)


if __name__ == "__main__":
    ctx = mp.get_context("fork")
    work(1)
    with ctx.Pool(2) as pool:
        print(sorted(pool.map(work, [2, 3, 4, 5, 6, 7])))
        pool.close()  # the workers leave through multiprocessing's exit hook (os._exit)
        pool.join()
    p = ctx.Process(target=child, args=(9,))  # leaves through os._exit
    p.start()
    p.join()
    print(p.exitcode)
'''


def test_forked_workers_calls_are_recorded(tmp_path):
    write(tmp_path, "workers.py", WORKERS)
    proc = record(tmp_path, sys.executable, "workers.py")
    assert proc.returncode == 0, proc.stderr.decode()
    assert proc.stdout.decode() == "[2, 3, 4, 5, 6, 7]\n0\n"
    rec = load_recording(tmp_path / "rec.json")
    assert rec.data["processes"] >= 3
    m = site(rec, "script")["methods"]["forward"]
    assert m["calls"] == 1 + 6 + 2
    assert m["variants"][0]["tensors"][0]["dims"][0]["sizes"] == [1, 2, 3, 4, 5, 6, 7, 9]


# ---- the program's output is unchanged --------------------------------------------------------------------------


SAME = '''
import sys
import warnings
import torch


def main():
    def helper(x):
        return x * 2

    @torch.jit.script
    def double_plus_one(x):
        return helper(x) + 1  # resolved from this frame: the recorder must not shift frames

    torch.manual_seed(0)
    lin = torch.jit.script(torch.nn.Linear(4, 3))
    traced = torch.jit.trace(torch.nn.Linear(4, 2), torch.ones(1, 4))
    for n in (1, 3):
        x = torch.randn(n, 4)
        print(lin(x).tolist(), traced(x).tolist(), double_plus_one(x).tolist(), lin.forward(x).sum().item())
    print(type(lin).__name__, type(double_plus_one).__name__, type(lin.forward).__name__, torch.jit.script.__name__)
    lin.eval()
    lin._save_for_lite_interpreter("lin.ptl")
    from torch.jit.mobile import _load_for_lite_interpreter

    lite = _load_for_lite_interpreter("lin.ptl")
    print(lite(x).tolist(), torch.jit.freeze(lin)(x).tolist())
    print(repr(lin), file=sys.stderr)
    warnings.warn("a warning of the program's own")
    try:
        lin(torch.ones(2, 5))  # fails inside the recorded call: the traceback must not show the recorder
    except RuntimeError as exc:
        raise ValueError("wrong width") from exc


main()
'''


def test_output_bytes_and_exit_code_are_identical_with_and_without_recording(tmp_path):
    write(tmp_path, "same.py", SAME)
    cmd = [sys.executable, "-W", "default", "same.py"]
    plain = subprocess.run(cmd, cwd=tmp_path, capture_output=True, timeout=300)
    recorded = record(tmp_path, *cmd)
    assert plain.returncode == recorded.returncode == 1
    assert recorded.stdout == plain.stdout and recorded.stderr == plain.stderr
    assert b"ValueError: wrong width" in plain.stderr and b"record/hooks" not in recorded.stderr
    assert b"own" in plain.stderr and plain.stdout.count(b"\n") == 4
    assert b"same.py:22: DeprecationWarning: Lite Interpreter is deprecated" in plain.stderr  # still the user's line
    rec = load_recording(tmp_path / "rec.json")
    fn = [s for s in rec.sites if s["target"] == "double_plus_one"][0]
    assert fn["line"] == line_of(tmp_path / "same.py", "@torch.jit.script") and fn["methods"]["forward"]["calls"] == 2
    lin = [s for s in rec.sites if s["kind"] == "script" and s["target"] == "Linear"][0]
    assert lin["methods"]["forward"]["calls"] == 5  # lin(x) and lin.forward(x), twice; the frozen copy once
    lite = site(rec, "load_lite")
    assert lite["methods"]["forward"]["calls"] == 1 and lite["artifacts"] == [str(tmp_path / "lin.ptl")]
    assert lin["saved"] == [str(tmp_path / "lin.ptl")]
    assert rec.data["recorder_errors"] == 0


# ---- pytest as the command -------------------------------------------------------------------------------------------


def test_recording_a_test_suite(tmp_path):
    write(tmp_path, "test_model.py", '''
        import torch


        def test_scripted():
            m = torch.jit.script(torch.nn.Linear(2, 2))
            assert m(torch.ones(3, 2)).shape == (3, 2)
    ''')
    proc = record(tmp_path, sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "test_model.py")
    assert proc.returncode == 0, proc.stdout.decode() + proc.stderr.decode()
    rec = load_recording(tmp_path / "rec.json")
    s = site(rec, "script")
    assert s["path"] == "test_model.py" and s["function"] == "test_scripted" and s["methods"]["forward"]["calls"] == 1


def test_a_recorded_test_suite_says_what_an_unfollowable_entry_point_compiled(tmp_path, run_cli):
    """`torch.jit.script(module)` in a test helper: statically any class of the run; the recording
    keeps the classes it was really handed (with their submodules'), which then stand for its
    target, and `scan --recording` says which entry points the run reached."""
    write(tmp_path, "layers.py", '''
        import torch


        class Inner(torch.nn.Module):
            def forward(self, x):
                return x * 2


        class Outer(torch.nn.Module):
            def __init__(self):
                super().__init__()
                self.inner = Inner()
                self.lin = torch.nn.Linear(2, 2)

            def forward(self, x):
                return self.lin(self.inner(x))


        class Eager(torch.nn.Module):
            @torch.jit.ignore
            def note(self) -> str:
                return "eager only"

            def forward(self, x):
                return x


        def make_scaler():
            def scale(x):
                return x * 3
            return scale


        def unused(x):
            return torch.jit.trace(Eager(), x)
    ''')
    write(tmp_path, "helpers.py", '''
        import torch


        def check(thing, x):
            return torch.jit.script(thing)(x)
    ''')
    write(tmp_path, "test_layers.py", '''
        import pytest
        import torch

        import layers
        from helpers import check

        BUILDERS = {"outer": layers.Outer, "scaler": layers.make_scaler}


        @pytest.mark.parametrize("name", sorted(BUILDERS))
        def test_scriptable(name):
            assert check(BUILDERS[name](), torch.ones(3, 2)).shape == (3, 2)
    ''')
    proc = record(tmp_path, sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "test_layers.py")
    assert proc.returncode == 0, proc.stdout.decode() + proc.stderr.decode()
    rec = load_recording(tmp_path / "rec.json")
    line = line_of(tmp_path / "helpers.py", "torch.jit.script(")
    assert sorted(rec.compiled_at("helpers.py", line)) == [
        ("layers.py", "Inner"), ("layers.py", "Outer"), ("layers.py", "make_scaler.scale")]
    assert rec.compiled_at("layers.py", line_of(tmp_path / "layers.py", "torch.jit.trace(")) is None  # never called

    code, out, _ = run_cli("scan", "--no-cache", ".", cwd=tmp_path)
    ignore = next(x for x in out.splitlines() if "TSX101" in x)
    assert "[held back: this code may be compiled by TorchScript through `torch.jit.script(thing)`" in ignore
    code, out, _ = run_cli("scan", "--no-cache", "--recording", "rec.json", ".", cwd=tmp_path)
    ignore = next(x for x in out.splitlines() if "TSX101" in x)
    assert ignore.endswith("[*]"), ignore  # Eager was never handed to the helper: its fix is free
    assert "Entry points the recording reached: 1 of 2" in out
    assert f"  reached     helpers.py:{line}:12 torch.jit.script(thing): compiled Inner, Outer, make_scaler.scale" in out
    assert "  not reached layers.py:" in out and "torch.jit.trace(Eager(), x)" in out
    code, out, _ = run_cli("scan", "--no-cache", "--format", "json", "--recording", "rec.json", ".", cwd=tmp_path)
    points = {(e["path"], e["reached"]): e["compiled"] for e in json.loads(out)["entry_points"]}
    assert points == {("helpers.py", True): ["Inner", "Outer", "make_scaler.scale"], ("layers.py", False): None}

    # a call of the helper that the run did not reach (a skipped test) may hand it any class: the
    # recording does not answer for it, and the fix waits again
    with open(tmp_path / "test_layers.py", "a", encoding="utf-8") as f:
        f.write("\n\n@pytest.mark.skip(reason='needs a GPU')\ndef test_eager():\n    check(getattr(layers, 'Ea' + 'ger')(), torch.ones(3, 2))\n")
    proc = record(tmp_path, sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "test_layers.py")
    assert proc.returncode == 0, proc.stdout.decode() + proc.stderr.decode()
    code, out, _ = run_cli("scan", "--no-cache", "--recording", "rec.json", ".", cwd=tmp_path)
    ignore = next(x for x in out.splitlines() if "TSX101" in x)
    assert "whose target ts2export cannot follow" in ignore, ignore


# ---- errors a user can cause -------------------------------------------------------------------------------------------


def test_user_errors_are_one_line_and_exit_2(tmp_path, run_cli):
    code, out, err = run_cli("record", "--", "no-such-command-ts2export", cwd=tmp_path)
    assert code == 2 and err.strip() == "error: cannot run 'no-such-command-ts2export': command not found"
    code, out, err = run_cli("record", cwd=tmp_path)
    assert code == 2 and err.count("\n") == 1 and "no command to record" in err
    code, out, err = run_cli("record", "-o", "missing/rec.json", "--", "true", cwd=tmp_path)
    assert code == 2 and "does not exist" in err
    assert not list(tmp_path.iterdir())


def test_reading_errors_are_one_line(tmp_path):
    with pytest.raises(RecordingError, match="no such recording"):
        load_recording(tmp_path / "none.json")
    (tmp_path / "x.json").write_text(json.dumps({"format": "other"}))
    with pytest.raises(RecordingError, match="not a ts2export recording"):
        load_recording(tmp_path / "x.json")
    (tmp_path / "y.json").write_text("{")
    with pytest.raises(RecordingError, match="not a readable recording"):
        load_recording(tmp_path / "y.json")


def test_a_command_without_torchscript_writes_an_empty_recording(tmp_path):
    proc = record(tmp_path, sys.executable, "-c", "print('hi')", quiet=False, samples=True)
    assert proc.returncode == 0 and proc.stdout == b"hi\n"
    assert b"no TorchScript entry point was called" in proc.stderr
    rec = load_recording(tmp_path / "rec.json")
    assert rec.sites == [] and rec.data["samples_file"] is None and not (tmp_path / "rec.samples.zip").exists()
    assert os.listdir(tmp_path) == ["rec.json"]


def test_recorded_inputs_command_lists_shows_and_writes(served, run_cli, tmp_path):
    tmp, prog, rec = served
    line = line_of(prog, "torch.jit.script(")
    code, out, err = run_cli("recorded-inputs", "rec.json", cwd=tmp)
    assert code == 0 and out == f"serve.py:{line}:9: script Tagger (forward: 6 calls; proof: proven)\n"
    code, out, err = run_cli("recorded-inputs", "rec.json", "--at", f"serve.py:{line}", cwd=tmp)
    assert code == 0 and 'ids_dim1 = torch.export.Dim("ids_dim1", max=64)\n' in out
    assert "dynamic_shapes = ({0: ids_dim0, 1: ids_dim1}, {0: ids_dim0, 1: ids_dim1}, None)\n" in out
    code, out, err = run_cli("recorded-inputs", "rec.json", "--at", f"serve.py:{line}", "-o", tmp_path / "in.pt", cwd=tmp)
    assert code == 0 and len(torch.load(tmp_path / "in.pt", weights_only=True)) == 3
    for bad, message in ((["--at", "serve.py:1"], "no recorded calls"), (["--at", "serve.py"], "FILE:LINE"),
                         (["-o", str(tmp_path / "x.pt")], "-o needs"), (["--artifact", "nothing.pt"], "no recorded calls")):
        code, out, err = run_cli("recorded-inputs", "rec.json", *bad, cwd=tmp)
        assert code == 2 and err.startswith("error: ") and message in err and err.count("\n") == 1
    assert not (tmp_path / "x.pt").exists()
