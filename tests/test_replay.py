"""A failed proof replayed on the code `apply --recording` writes (ts2export.engine.replayed,
ts2export.record.hooks.replay): the recording keeps the object of a proof that failed in the
user's code; apply lays out the migrated files in a scratch copy and exports the object from them.
Where the rewritten code exports and computes what TorchScript computed, the entry point migrates;
where it does not, it is held back with what failed there.

Each program runs for real in a child process, so these tests are slow.
"""

from __future__ import annotations

import json
import sys
import zipfile
from pathlib import Path

import pytest
import torch

from ts2export.record.recording import load_recording
from tests.test_prove import proof, run_output, ts2export, write

pytestmark = pytest.mark.slow

# The branch on a value becomes torch.cond (TSX401, an unsafe fix). In ROUTER the two branches give
# the output different dtypes through a function the rule does not follow (it sees `.double()` in
# the branch, or in a method of the module): TorchScript returns either, torch.cond refuses them
# (export fails on the rewritten line).
GATE = '''
import torch
from torch import nn


class Gate(nn.Module):
    def __init__(self):
        super().__init__()
        self.low = nn.Linear(4, 4)
        self.high = nn.Linear(4, 4)

    def forward(self, x):
        if x.mean() > 0:
            y = self.high(x)
        else:
            y = self.low(x) * 0.5
        return torch.relu(y)


def build():
    torch.manual_seed(0)
    return Gate().eval()
'''

ROUTER = GATE.replace("y = self.high(x)\n", "y = precise(self.high(x))\n").replace(
    "def build():", "def precise(t):  # (Gate computes confident batches in float64)\n    return t.double()\n\n\ndef build():")

MAIN = '''
import sys
import torch
from model import build

model = torch.jit.script(build())
torch.manual_seed(1)
outs = [model(torch.randn(n, 4) + shift) for n, shift in ((3, 1.0), (5, -1.0), (8, 2.0))]
torch.save(outs, sys.argv[1])
'''


def _recorded(tmp_path: Path, model: str) -> list:
    write(tmp_path, "model.py", model)
    write(tmp_path, "main.py", MAIN)
    before = run_output(tmp_path)
    done = ts2export(tmp_path, "record", "-o", "rec.json", "--", sys.executable, "main.py", "out.pt")
    assert done.returncode == 0 and "1 failed" in done.stderr, done.stderr
    rec = load_recording(tmp_path / "rec.json")
    verdict = proof(rec)
    assert verdict["verdict"] == "failed" and verdict["step"] == "export" and verdict["frame"][0].endswith("model.py")
    kit = rec.replay_kit(verdict["replay"])  # the object, the inputs and TorchScript's outputs
    with zipfile.ZipFile(__import__("io").BytesIO(kit)) as zf:
        assert str(tmp_path) in json.loads(zf.read("path.json")) and zf.read("kit.pt")
    return before


def test_a_proof_that_failed_where_apply_rewrites_is_replayed_on_the_rewritten_code_and_migrates(tmp_path):
    before = _recorded(tmp_path, GATE)
    applied = ts2export(tmp_path, "apply", "--unsafe-fixes", "--no-cache", "--recording", "rec.json", ".")
    assert applied.returncode == 0, applied.stderr
    assert "torch.cond(" in (tmp_path / "model.py").read_text()
    assert "torch.export.export(build()" in (tmp_path / "main.py").read_text()
    assert "Recorded proofs run again on the code written: 1 proven, 0 failed" in applied.stdout
    after = run_output(tmp_path)
    assert all(torch.equal(a, b) for a, b in zip(before, after))


def test_a_replay_that_fails_on_the_rewritten_code_holds_the_entry_point_with_the_line(tmp_path):
    before = _recorded(tmp_path, ROUTER)
    applied = ts2export(tmp_path, "apply", "--unsafe-fixes", "--no-cache", "--recording", "rec.json", ".")
    assert applied.returncode == 1, applied.stderr  # findings are left
    out = applied.stdout + applied.stderr
    assert "its recorded proof, run again on the code apply writes, failed at model.py:" in out, out
    assert "Recorded proofs run again on the code written: 0 proven, 1 failed (held back)" in out
    assert "torch.jit.script(build())" in (tmp_path / "main.py").read_text()  # held: nothing of the unit written
    assert "torch.cond(" not in (tmp_path / "model.py").read_text()  # (TorchScript still compiles forward)
    after = run_output(tmp_path)
    assert all(torch.equal(a, b) for a, b in zip(before, after))


def test_a_replay_whose_object_does_not_come_from_the_written_code_changes_nothing(tmp_path, monkeypatch):
    """The object's class imports from elsewhere (an installed copy, a folder the copy lacks): the
    replay says so, and the decision stays the static one."""
    from ts2export.engine import replayed

    _recorded(tmp_path, GATE)
    rec = load_recording(tmp_path / "rec.json")
    kit = tmp_path / "kit.zip"
    kit.write_bytes(rec.replay_kit(proof(rec)["replay"]))
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    verdict = replayed._replay(kit, tmp_path, tmp_path, elsewhere)  # the copy holds no model.py
    assert verdict["verdict"] == "not replayed" and "not from the code apply writes" in verdict["error"]
