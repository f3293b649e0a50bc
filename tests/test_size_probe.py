"""The never-broken harness's size probe (ts2export.harness.sizes): a migrated program whose export
call asked for dynamic dimensions is called at other sizes, and an exported program that refuses
inputs its module takes is a break, while the program's own outputs stay those it computes alone."""

from __future__ import annotations

import textwrap
from pathlib import Path

import pytest
import torch

from ts2export.harness.corpus import run_program

pytestmark = pytest.mark.slow

PROGRAM = '''
import sys
import torch
from torch.export import Dim

torch.manual_seed(0)
model = torch.nn.Sequential(torch.nn.Linear(4, 3), torch.nn.Dropout(0.5)).train()
example = torch.ones(BATCH, 4)
ep = torch.export.export(model, (example,), dynamic_shapes=({0: Dim.AUTO, 1: Dim.AUTO},))
outputs = [ep.module()(example), torch.randn(3)]  # the random state after the export is the program's
torch.save(outputs, sys.argv[1])
'''


def _program(tmp_path: Path, batch: int) -> Path:
    (tmp_path / "main.py").write_text(textwrap.dedent(PROGRAM).replace("BATCH", str(batch)), encoding="utf-8")
    return tmp_path


def test_an_export_that_specialized_a_size_one_example_is_a_break(tmp_path):
    with pytest.raises(RuntimeError) as caught:
        run_program(_program(tmp_path, 1), "main.py", 120, probe_sizes=True)
    said = str(caught.value)
    assert "refuses sizes its module takes" in said and "input 0 dim 0 at 2 (example 1)" in said
    assert "Guard failed" in said
    run_program(tmp_path, "main.py", 120)  # without the probe the program runs: its own calls are at size 1


def test_the_probe_leaves_the_programs_outputs_alone(tmp_path):
    probed, _ = run_program(_program(tmp_path, 3), "main.py", 120, probe_sizes=True)
    alone, _ = run_program(tmp_path, "main.py", 120)
    assert len(probed) == 2 and all(torch.equal(a, b) for a, b in zip(probed, alone))
