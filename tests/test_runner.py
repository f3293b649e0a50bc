"""The warm runner (ts2export.runner): a program run in a forked child of a server that has imported
torch behaves as the same program run by a new interpreter: argv, cwd, environment, sys.path,
__main__, warnings, sitecustomize, exit codes, output, exit handlers and threads; a timeout kills
the run and what it started; one run leaves nothing behind for the next."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time

import pytest

from ts2export.runner import WarmRunner
from ts2export.runner.client import RunnerTimeout

PROBE = r'''
import json, os, sys, threading, time, atexit, warnings
import helper

def later():
    print("exit handler ran")

atexit.register(later)
threading.Thread(target=lambda: (time.sleep(0.5), print("thread joined"))).start()
with warnings.catch_warnings(record=True) as caught:
    warnings.simplefilter("default")
    warnings.warn("deprecated", DeprecationWarning)
helper.COUNT += 1

def annotated(x: int) -> float:
    return x

facts = {
    "argv": sys.argv, "cwd": os.getcwd(), "path0": sys.path[0], "name": __name__, "file": __file__,
    "env": os.environ.get("PROBE_VAR"), "hash": hash("ts2export"), "count": helper.COUNT,
    "main_is_module": sys.modules["__main__"].__dict__ is globals(), "caught": len(caught),
    "site": os.environ.get("PROBE_SITE"), "bytecode": sys.dont_write_bytecode,
    "warnoptions": sys.warnoptions, "annotations": repr(annotated.__annotations__), "pythonpath_first": [p for p in sys.path if p.endswith("extra")][:1],
}
print(json.dumps(facts, sort_keys=True))
warnings.warn("shown or not by -W", DeprecationWarning)
print("to stderr", file=sys.stderr)
code = sys.argv[1] if len(sys.argv) > 1 else "0"
if code == "raise":
    raise ValueError("boom")
sys.exit(int(code))
'''


@pytest.fixture(scope="module")
def runner():
    r = WarmRunner({"PYTHONHASHSEED": "0"})  # the default preload: torch, its export machinery, the CLI
    yield r
    r.close()


@pytest.fixture
def program(tmp_path):
    (tmp_path / "prog").mkdir()
    (tmp_path / "prog" / "probe.py").write_text(PROBE)
    (tmp_path / "prog" / "helper.py").write_text("COUNT = 0\n")
    extra = tmp_path / "extra"
    extra.mkdir()
    (extra / "sitecustomize.py").write_text("import os\nos.environ['PROBE_SITE'] = 'loaded'\n")
    env = dict(os.environ, PYTHONHASHSEED="0", PROBE_VAR="yes", PYTHONPATH=str(extra), PYTHONDONTWRITEBYTECODE="1")
    return tmp_path / "prog", env


def _cold(argv, cwd, env, warn=()):
    cmd = [sys.executable, *[f"-W{w}" for w in warn], *argv]
    return subprocess.run(cmd, cwd=cwd, env=env, capture_output=True, text=True, timeout=120)


def _facts(stdout: str) -> dict:
    return json.loads(next(line for line in stdout.splitlines() if line.startswith("{")))


@pytest.mark.parametrize("code,warn", [("0", ()), ("3", ("ignore::DeprecationWarning",)), ("raise", ())])
def test_a_warm_run_looks_like_a_cold_one(runner, program, code, warn):
    cwd, env = program
    cold = _cold(["probe.py", code], cwd, env, warn)
    warm = runner.run(["probe.py", code], cwd, env, 120, warn)
    assert warm.returncode == cold.returncode == {"0": 0, "3": 3, "raise": 1}[code]
    assert _facts(warm.stdout) == _facts(cold.stdout)
    assert warm.stdout == cold.stdout  # exit handlers and joined threads print in the same order
    assert warm.stderr == cold.stderr  # warnings as -W leaves them, the traceback from the program's frame


def test_runs_share_no_module_state(runner, program):
    cwd, env = program
    counts = [_facts(runner.run(["probe.py"], cwd, env, 120).stdout)["count"] for _ in range(3)]
    assert counts == [1, 1, 1]  # each run imports `helper` afresh


def test_module_form(runner, program, tmp_path):
    cwd, env = program
    warm = runner.run(["-m", "probe", "0"], cwd, env, 120)
    cold = _cold(["-m", "probe", "0"], cwd, env)
    assert warm.returncode == cold.returncode == 0
    assert _facts(warm.stdout) == _facts(cold.stdout)


def test_code_form(runner, tmp_path):
    code = "import sys, os; print(sys.argv, repr(sys.path[0]), __name__)"
    warm = runner.run(["-c", code, "x"], tmp_path, dict(os.environ), 60)
    cold = _cold(["-c", code, "x"], tmp_path, dict(os.environ))
    assert warm.returncode == cold.returncode == 0 and warm.stdout == cold.stdout == "['-c', 'x'] '' __main__\n"


def test_a_timeout_kills_the_run_and_what_it_started(runner, tmp_path):
    marker = tmp_path / "grandchild.pid"
    (tmp_path / "hang.py").write_text(
        "import subprocess, sys, time\n"
        f"p = subprocess.Popen([sys.executable, '-c', 'import time; time.sleep(300)'])\n"
        f"open({str(marker)!r}, 'w').write(str(p.pid))\n"
        "print('started', flush=True)\n"
        "time.sleep(300)\n"
    )
    started = time.monotonic()
    with pytest.raises(RunnerTimeout) as info:
        runner.run(["hang.py"], tmp_path, dict(os.environ), timeout=3)
    assert time.monotonic() - started < 60
    assert "started" in info.value.output
    pid = int(marker.read_text())
    for _ in range(50):  # the grandchild was in the run's process group
        try:
            os.kill(pid, 0)
        except ProcessLookupError:
            break
        time.sleep(0.1)
    else:
        pytest.fail("the run's own child outlived the timeout")
    ok = tmp_path / "ok.py"
    ok.write_text("print('after the timeout')\n")
    assert runner.run(["ok.py"], tmp_path, dict(os.environ), 60).stdout == "after the timeout\n"


def test_a_run_killed_by_a_signal(runner, tmp_path):
    (tmp_path / "killed.py").write_text("import os, signal\nos.kill(os.getpid(), signal.SIGKILL)\n")
    assert runner.run(["killed.py"], tmp_path, dict(os.environ), 60).returncode == -9


def test_torch_runs_in_the_child(runner, tmp_path):
    (tmp_path / "t.py").write_text(
        "import sys, torch\nfrom typing import Final\ntorch.manual_seed(0)\nm = torch.jit.script(torch.nn.Linear(3, 2))\n"
        "class Scaled(torch.nn.Module):\n    scale: Final[float]\n    def __init__(self):\n"
        "        super().__init__()\n        self.scale = 2.0\n"
        "    def forward(self, x: torch.Tensor) -> torch.Tensor:\n        return x * self.scale\n"
        "print(torch.jit.script(Scaled())(torch.ones(2)))\n"
        "ep = torch.export.export(torch.nn.Linear(3, 2), (torch.ones(1, 3),))\n"
        "print(torch.get_num_threads(), m(torch.ones(1, 3)).shape, torch.rand(1).item())\n")
    env = dict(os.environ, PYTHONHASHSEED="0")
    warm = runner.run(["t.py"], tmp_path, env, 300)
    cold = _cold(["t.py"], tmp_path, env)
    assert warm.returncode == cold.returncode == 0, warm.stderr
    assert warm.stdout == cold.stdout  # the same thread count, the same seeded values


def test_the_server_learns_the_library_modules_a_run_imported_and_never_the_programs_own(tmp_path):
    """After a run, the server imports what the run imported from the interpreter's libraries (the
    next run finds it loaded: ExecuTorch is paid for once per server, not once per run); the
    program's own modules are never learned, and the runs still share no state."""
    (tmp_path / "mine.py").write_text("VALUE = []\n")
    (tmp_path / "uses.py").write_text("import colorsys, mine\nmine.VALUE.append(1)\nprint(len(mine.VALUE))\n")
    (tmp_path / "looks.py").write_text("import sys\nprint('colorsys' in sys.modules, 'mine' in sys.modules)\n")
    env = dict(os.environ)
    learning = WarmRunner(preload=("json",))
    plain = WarmRunner(preload=("json",), learn=False)
    try:
        for runner in (learning, plain):
            assert runner.run(["looks.py"], tmp_path, env, 60).stdout == "False False\n"
            assert runner.run(["uses.py"], tmp_path, env, 60).stdout == "1\n"
        assert learning.run(["looks.py"], tmp_path, env, 60).stdout == "True False\n"
        assert learning.run(["uses.py"], tmp_path, env, 60).stdout == "1\n"  # `mine` is imported afresh
        assert plain.run(["looks.py"], tmp_path, env, 60).stdout == "False False\n"
    finally:
        learning.close()
        plain.close()
