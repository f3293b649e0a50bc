"""Running Python programs warm: :class:`WarmRunner` (one server, a forked child per run) and
:func:`run_python`, which takes a warm server for the run's start-up settings where it can and
runs the program cold (a new interpreter) where it cannot."""

from __future__ import annotations

import atexit
import json
import os
import select
import signal
import subprocess
import sys
import tempfile
import threading
import time
from dataclasses import dataclass
from pathlib import Path

from ts2export.runner.server import FDS_ENV

#: Environment variables an interpreter reads when it starts (or torch when it is imported): runs
#: that differ in them cannot share a server.
STARTUP_ENV = ("PYTHONHASHSEED", "OMP_NUM_THREADS", "MKL_NUM_THREADS", "OPENBLAS_NUM_THREADS",
               "TORCH_LOGS", "PYTORCH_JIT", "PYTHONUTF8", "PYTHONIOENCODING", "LANG", "LC_ALL")
#: What a server imports before it forks, by default: torch, and what torch imports only when a
#: program first exports (torch._dynamo, sympy, the fake tensors: over a thousand modules, most of
#: a first export's cost), saves or compares; the CLI for a recorded run.
PRELOAD = ("torch", "torch.export", "torch.utils._pytree", "torch._dynamo", "torch._export", "torch.export._trace",
           "torch._functorch.aot_autograd", "torch._higher_order_ops", "torch._decomp", "torch._subclasses.fake_tensor",
           "torch.fx.experimental.symbolic_shapes", "torch._export.serde.serialize", "torch.testing", "sympy",
           "libcst", "ts2export.cli")
WARM_ENV = "TS2EXPORT_WARM"  # "0": every run cold
LEARN_ENV = "TS2EXPORT_WARM_LEARN"  # "0": the server imports only its preload list


@dataclass
class Completed:
    """How a program run ended (the fields of subprocess.CompletedProcess that matter here)."""

    args: list[str]
    returncode: int
    stdout: str
    stderr: str
    warm: bool = True


class RunnerTimeout(subprocess.TimeoutExpired):
    pass


class WarmRunner:
    """A server process that has imported ``preload`` and forks a child per :meth:`run`."""

    def __init__(self, startup_env: dict[str, str] | None = None, preload: tuple[str, ...] = PRELOAD,
                 python: str = sys.executable, learn: bool | None = None) -> None:
        self.startup_env = dict(startup_env or {})
        # learn: the server imports, after each run, the library modules the run imported beyond its
        # preload (see ts2export.runner.server); TS2EXPORT_WARM_LEARN=0 turns it off
        self.learn = os.environ.get(LEARN_ENV, "1") != "0" if learn is None else learn
        self.python = python
        self._lock = threading.Lock()
        req_r, req_w = os.pipe()
        ans_r, ans_w = os.pipe()
        env = dict(os.environ)
        for key in STARTUP_ENV:
            env.pop(key, None)
        env.update(self.startup_env)
        env[FDS_ENV] = f"{req_r},{ans_w}"
        self.proc = subprocess.Popen(
            [python, "-m", "ts2export.runner.server", *preload], env=env, pass_fds=(req_r, ans_w),
            stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
            cwd=tempfile.gettempdir(), start_new_session=True,
        )
        os.close(req_r)
        os.close(ans_w)
        self._requests = os.fdopen(req_w, "w", encoding="utf-8")
        self._answers = ans_r
        self._buffer = b""
        self.runs = 0
        self.preloaded: list[str] | None = None  # set once the server said it is ready

    def wait_ready(self) -> list[str]:
        """Wait until the server has imported what it preloads; the modules it could import."""
        if self.preloaded is None:
            self.preloaded = self._answer(None)["ready"]
        return self.preloaded

    def alive(self) -> bool:
        return self.proc.poll() is None

    def run(self, argv: list[str], cwd: str | os.PathLike, env: dict[str, str], timeout: float | None = None,
            warnoptions: tuple[str, ...] = (), stdin: str | None = None) -> Completed:
        """Run ``python [-W opt]... argv`` (``argv``: a script and its arguments, ``-m module`` or
        ``-c code`` and their arguments) in ``cwd`` with exactly ``env``. Raises
        subprocess.TimeoutExpired."""
        with self._lock, tempfile.TemporaryDirectory(prefix="ts2export-run-") as tmp:
            self.wait_ready()
            out, err = Path(tmp) / "stdout", Path(tmp) / "stderr"
            request = {"argv": [str(a) for a in argv], "cwd": str(cwd), "env": dict(env), "stdout": str(out),
                       "stderr": str(err), "stdin": stdin, "warnoptions": list(warnoptions),
                       "learn": str(Path(tmp) / "learned") if self.learn else None}
            self._requests.write(json.dumps(request) + "\n")
            self._requests.flush()
            pid = self._answer(None)["pid"]
            deadline = None if timeout is None else time.monotonic() + timeout
            try:
                status = self._answer(deadline)["status"]
            except subprocess.TimeoutExpired:
                _kill_group(pid)
                self._answer(None)  # the server reaps the child
                raise RunnerTimeout([self.python, *argv], timeout,
                                    output=_read(out), stderr=_read(err)) from None
            self.runs += 1
            return Completed([self.python, *argv], _returncode(status), _read(out), _read(err))

    def _answer(self, deadline: float | None) -> dict:
        while b"\n" not in self._buffer:
            wait = None if deadline is None else max(0.0, deadline - time.monotonic())
            ready, _, _ = select.select([self._answers], [], [], wait)
            if not ready:
                raise subprocess.TimeoutExpired("warm runner", wait or 0)
            chunk = os.read(self._answers, 65536)
            if not chunk:
                detail = self.proc.stderr.read().decode(errors="replace") if self.proc.stderr else ""
                raise RuntimeError(f"the warm runner's server ended ({self.proc.wait()}): {detail[-2000:]}")
            self._buffer += chunk
        line, self._buffer = self._buffer.split(b"\n", 1)
        return json.loads(line)

    def close(self) -> None:
        try:
            self._requests.close()
        except OSError:
            pass
        try:
            self.proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()
        if self.proc.stderr:
            self.proc.stderr.close()
        try:
            os.close(self._answers)
        except OSError:
            pass


def _kill_group(pid: int) -> None:
    try:
        os.killpg(pid, signal.SIGKILL)
    except (ProcessLookupError, PermissionError):
        pass


def _read(path: Path) -> str:
    try:
        return path.read_bytes().decode("utf-8", errors="replace")
    except OSError:
        return ""


def _returncode(status: int) -> int:
    """As subprocess reports it: the exit code, or -N for a child killed by signal N."""
    if os.WIFSIGNALED(status):
        return -os.WTERMSIG(status)
    return os.WEXITSTATUS(status)


_runners: dict[tuple, WarmRunner] = {}
_runners_lock = threading.Lock()


def warm_available() -> bool:
    return sys.platform.startswith("linux") and hasattr(os, "fork") and os.environ.get(WARM_ENV, "1") != "0"


def shared_runner(env: dict[str, str]) -> WarmRunner:
    """The process's runner for ``env``'s start-up settings (started when first asked for)."""
    key = tuple((k, env.get(k)) for k in STARTUP_ENV)
    with _runners_lock:
        runner = _runners.get(key)
        if runner is None or not runner.alive():
            runner = WarmRunner({k: v for k, v in key if v is not None})
            _runners[key] = runner
        return runner


@atexit.register
def _close_all() -> None:
    for runner in list(_runners.values()):
        runner.close()
    _runners.clear()


def run_python(argv: list[str], cwd: str | os.PathLike, env: dict[str, str], timeout: float | None = None,
               warnoptions: tuple[str, ...] = ()) -> Completed:
    """Run ``python [-W opt]... argv`` in ``cwd`` with ``env``: warm where this platform forks,
    cold otherwise (or with TS2EXPORT_WARM=0). Raises subprocess.TimeoutExpired."""
    if warm_available():
        return shared_runner(env).run(argv, cwd, env, timeout, warnoptions)
    command = [sys.executable, *[f"-W{w}" for w in warnoptions], *[str(a) for a in argv]]
    proc = subprocess.run(command, cwd=cwd, env=env, capture_output=True, text=True, timeout=timeout,
                          start_new_session=True)
    return Completed(command, proc.returncode, proc.stdout, proc.stderr, warm=False)
