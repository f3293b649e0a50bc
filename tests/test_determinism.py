"""A run's findings never depend on the order of libcst's sets.

libcst keeps a name's assignments and references in sets of objects hashed by identity, so their
order changes from run to run (memory addresses). A rule that reported the first use it could not
rewrite named a different use in different runs of the same code (found over torch's own
``testing/_internal/jit_utils.py``: two runs of ``check`` over the torch tree differed in one
message). Rules take such sets through ``Rule.in_source_order``.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

from ts2export.engine import analyze

from tests.test_cache import configured, report

ROUNDTRIP = '''\
import io
import tempfile

import torch


def roundtrip(m, also_file=False):
    buffer = io.BytesIO()
    torch.jit.save(m, buffer)
    buffer.seek(0)
    imported = torch.jit.load(buffer)
    imported.apply(lambda s: None)
    if not also_file:
        return imported
    with tempfile.NamedTemporaryFile() as f:
        imported.save(f.name)
        return torch.jit.load(f.name)
'''


def _load_messages(doc: dict) -> list[str]:
    return [f["message"] for f in doc["findings"] if f["line"] == 11]


def test_the_first_use_that_cannot_be_rewritten_is_named_in_every_run(tmp_path: Path):
    path = tmp_path / "roundtrip.py"
    path.write_text(ROUNDTRIP)
    tasks, options = configured(path)
    seen = {json.dumps(report(analyze(tasks, options, 1)), sort_keys=True) for _ in range(6)}
    assert len(seen) == 1
    messages = _load_messages(json.loads(seen.pop()))
    # `return imported` (line 14) comes before `imported.save(f.name)` (line 16)
    assert messages == ["`torch.jit.load(...)` not rewritten: `imported` (line 14) has no rewrite for a set of "
                        "exported programs"], messages


def test_separate_processes_give_the_same_report(tmp_path: Path):
    path = tmp_path / "roundtrip.py"
    path.write_text(ROUNDTRIP)
    outputs = set()
    for _ in range(3):  # each process lays its objects out anew
        done = subprocess.run([sys.executable, "-m", "ts2export", "check", "--no-cache", "--no-progress",
                               "--format", "json", str(path)], capture_output=True, text=True, check=False)
        assert done.returncode in (0, 1), done.stderr
        outputs.add(done.stdout)
    assert len(outputs) == 1
