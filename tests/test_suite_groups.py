"""The suite's xdist groups hold: tests marked ``xdist_group`` run on one worker.

scripts/test.sh runs ``--dist loadgroup`` so that a group's session fixtures (the model store and its
reference run, the AOTInductor package) are made once. pytest 9.2 with pytest-xdist 3.8 silently ran
each group on every worker (pyproject.toml pins pytest below 9.2); this test notices such a change."""

from __future__ import annotations

import re
import subprocess
import sys


def test_a_group_runs_on_one_worker(tmp_path):
    (tmp_path / "test_grouped.py").write_text(
        "import pytest\n"
        "@pytest.mark.xdist_group('together')\n@pytest.mark.parametrize('i', range(8))\ndef test_member(i):\n    pass\n"
        "@pytest.mark.xdist_group('apart')\n@pytest.mark.parametrize('i', range(8))\ndef test_neighbour(i):\n    pass\n")
    proc = subprocess.run([sys.executable, "-m", "pytest", "-p", "no:cacheprovider", "-n", "2", "--dist", "loadgroup", "-v",
                           "test_grouped.py"], cwd=tmp_path, capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stdout[-2000:] + proc.stderr[-2000:]
    ran = re.findall(r"\[(gw\d+)\] \[\s*\d+%\] PASSED test_grouped.py::(test_\w+)\[\d+\]@(\w+)", proc.stdout)
    assert len(ran) == 16, proc.stdout[-2000:]
    workers = {group: {w for w, _, g in ran if g == group} for group in ("together", "apart")}
    assert all(len(ws) == 1 for ws in workers.values()), workers
