"""Where a model store's artifacts run: a pool of local worker processes, or Ray tasks.

Both take tasks (``storetask`` plain data) and hand each finished record to ``on_done`` in the
calling thread, one artifact at a time, so that the run state is written by one writer.

* ``LocalExecutor``: ``--jobs N`` worker processes (``python -m ts2export.artifact.worker``), each
  in its own session (a Ctrl-C reaches the parent only, which stops them). A worker runs one artifact
  at a time; one that runs past ``--timeout`` seconds or whose peak resident memory passes
  ``--max-memory`` is killed and replaced, and its artifact gets the status ``timeout`` or
  ``crashed``; a worker that dies (a segfault in native code, the kernel's OOM killer) gives
  ``crashed``. The run goes on either way.
* ``RayExecutor``: one Ray task per artifact (``num_gpus=1`` where the artifact's graph or weights
  name an accelerator, or ``--device`` names one), ``max_retries`` for lost workers, at most
  ``--jobs`` tasks in flight; a task past ``--timeout`` is cancelled (``timeout``), one whose worker
  was lost more often than the retries allow gives ``crashed``.
"""

from __future__ import annotations

import json
import os
import queue
import select
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from ts2export.artifact.errors import ArtifactError

Task = tuple[str, dict[str, Any]]  # (key, task)
OnDone = Callable[[str, dict[str, Any]], None]
RAY_MISSING = "--executor ray needs ray: pip install 'ts2export[ray]'"


def _failure(status: str, failure_class: str, error: str, seconds: float) -> dict[str, Any]:
    return {"status": status, "failure_class": failure_class, "error": error, "timings": {"total": seconds},
            "sizes": {}, "max_abs_error": None, "steps": []}


def _peak_rss(pid: int) -> int | None:
    """The highest resident memory a process has had, in bytes (Linux /proc, ``VmHWM``); None where
    it cannot be read. The peak, not a sample: a spike between two polls, or an artifact that passes
    the bound and finishes before the first poll, is still seen."""
    try:
        with open(f"/proc/{pid}/status") as fh:
            for line in fh:
                if line.startswith("VmHWM:"):
                    return int(line.split()[1]) * 1024
    except (OSError, ValueError, IndexError):
        return None
    return None


class _Worker:
    """One worker process and the lines it sends back."""

    def __init__(self, log: Path, env: dict[str, str]) -> None:
        self.log = open(log, "ab")
        self.proc = subprocess.Popen(
            [sys.executable, "-m", "ts2export.artifact.worker"], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
            stderr=self.log, start_new_session=True, env=env,
        )
        self.buffer = b""

    def send(self, task: dict[str, Any]) -> None:
        self.proc.stdin.write((json.dumps(task) + "\n").encode("utf-8"))
        self.proc.stdin.flush()

    def poll_line(self, wait: float) -> bytes | None:
        """A complete line if one arrives within `wait` seconds; b"" at end of output; else None."""
        if b"\n" not in self.buffer:
            ready, _, _ = select.select([self.proc.stdout], [], [], wait)
            if not ready:
                return None
            chunk = os.read(self.proc.stdout.fileno(), 1 << 16)
            if not chunk:
                return b""
            self.buffer += chunk
        if b"\n" not in self.buffer:
            return None
        line, self.buffer = self.buffer.split(b"\n", 1)
        return line

    def kill(self) -> None:
        try:
            os.killpg(self.proc.pid, signal.SIGKILL)
        except (ProcessLookupError, PermissionError):
            pass
        self.proc.wait()
        self.close()

    def close(self) -> None:
        for stream in (self.proc.stdin, self.proc.stdout):
            try:
                stream.close()
            except OSError:
                pass
        self.log.close()

    def death(self) -> str:
        code = self.proc.wait()
        return f"the worker died (signal {-code})" if code < 0 else f"the worker exited with code {code}"


class LocalExecutor:
    STARTUP_SECONDS = 300.0  # importing torch on a busy machine

    def __init__(self, jobs: int, timeout: float, max_memory: int | None, logs: Path) -> None:
        self.jobs = max(1, jobs)
        self.timeout = timeout
        self.max_memory = max_memory
        self.logs = logs
        self.stop = threading.Event()
        self.workers: set[_Worker] = set()
        self.lock = threading.Lock()
        # the cores shared among the workers (as Ray does for its tasks), unless the user chose
        threads = str(max(1, (os.cpu_count() or 1) // self.jobs))
        self.env = {**os.environ, "OMP_NUM_THREADS": os.environ.get("OMP_NUM_THREADS", threads)}

    def _start(self, slot: int) -> _Worker:
        self.logs.mkdir(parents=True, exist_ok=True)
        w = _Worker(self.logs / f"worker-{slot}.log", self.env)
        with self.lock:
            self.workers.add(w)
        deadline = time.monotonic() + self.STARTUP_SECONDS
        while time.monotonic() < deadline and not self.stop.is_set():
            line = w.poll_line(0.25)
            if line is None:
                continue
            if line and json.loads(line).get("ready"):
                return w
            break
        self._drop(w)
        raise ArtifactError(f"a worker process did not start (see {self.logs / f'worker-{slot}.log'})")

    def _drop(self, w: _Worker) -> None:
        w.kill()
        with self.lock:
            self.workers.discard(w)

    def _run_one(self, w: _Worker, task: dict[str, Any]) -> tuple[dict[str, Any], bool]:
        """(record, whether the worker is still usable)."""
        t0 = time.monotonic()
        w.send(task)
        while not self.stop.is_set():
            line = w.poll_line(0.25)
            elapsed = time.monotonic() - t0
            if line == b"":
                return _failure("crashed", "worker-died", w.death(), elapsed), False
            # checked before a finished artifact is taken too, so the verdict never hangs on timing
            over = self._over_memory(w, elapsed)
            if over is not None:
                return over, False
            if line is not None:
                return json.loads(line), True
            if self.timeout and elapsed > self.timeout:
                return _failure("timeout", "timeout", f"still running after {self.timeout:g} s; the worker was killed", elapsed), False
        return {}, False

    def _over_memory(self, w: _Worker, elapsed: float) -> dict[str, Any] | None:
        """The failure record when the worker's peak resident memory has passed ``--max-memory``."""
        peak = _peak_rss(w.proc.pid) if self.max_memory else None
        if peak is None or peak <= self.max_memory:
            return None
        return _failure("crashed", "memory", f"resident memory {peak / 2**20:.0f} MiB passed --max-memory "
                        f"{self.max_memory / 2**20:.0f} MiB; the worker was killed", elapsed)

    def _loop(self, slot: int, tasks: queue.Queue, results: queue.Queue) -> None:
        w: _Worker | None = None
        try:
            while not self.stop.is_set():
                try:
                    key, task = tasks.get_nowait()
                except queue.Empty:
                    break
                if w is None:
                    w = self._start(slot)
                record, usable = self._run_one(w, task)
                if self.stop.is_set():
                    break
                results.put((key, record))
                if not usable:
                    self._drop(w)
                    w = None
        except BaseException as exc:  # noqa: BLE001 - handed to the calling thread
            results.put((None, exc))
        finally:
            if w is not None:
                self._drop(w)
            results.put((None, None))

    def run(self, tasks: Sequence[Task], on_done: OnDone) -> None:
        todo: queue.Queue = queue.Queue()
        for t in tasks:
            todo.put(t)
        results: queue.Queue = queue.Queue()
        n = min(self.jobs, len(tasks))
        threads = [threading.Thread(target=self._loop, args=(i, todo, results), daemon=True) for i in range(n)]
        for t in threads:
            t.start()
        running = n
        try:
            while running:
                try:
                    key, item = results.get(timeout=0.5)
                except queue.Empty:
                    continue
                if key is None:
                    if isinstance(item, BaseException):
                        raise item
                    running -= 1
                    continue
                on_done(key, item)
        finally:
            self.stop.set()
            with self.lock:
                workers = list(self.workers)
            for w in workers:
                w.kill()
            for t in threads:
                t.join(timeout=10)


def _ray_task(task: dict[str, Any]) -> dict[str, Any]:
    from ts2export.artifact.storetask import run_task

    return run_task(task)


def needs_accelerator(path: str, device: str) -> bool:
    """Whether the artifact must run on an accelerator: `--device` names one, or (auto) its graph
    pins one or its weights were saved on one (the choice devices.choose_device makes)."""
    if device != "auto":
        return not device.startswith("cpu")
    from ts2export.artifact.devices import DeviceNeeds, graph_pins, stored_locations
    from ts2export.artifact.loading import load_torchscript, script_methods
    from ts2export.artifact.storetask import quiet

    stored = stored_locations(path)
    with quiet():
        try:
            sm = load_torchscript(path, "cpu")
            pins = graph_pins(sm, script_methods(sm))
        except Exception:  # the task itself reports the artifact's load error
            pins = []
    needs = DeviceNeeds(stored, pins)
    return bool(needs.pinned_accelerators() or needs.stored_accelerators())


class RayExecutor:
    def __init__(self, jobs: int | None, timeout: float, max_memory: int | None, address: str | None,
                 retries: int = 3, device: str = "auto") -> None:
        try:
            import ray
        except ImportError:
            raise ArtifactError(RAY_MISSING) from None
        self.ray = ray
        self.timeout = timeout
        self.max_memory = max_memory
        self.retries = retries
        self.device = device
        address = address or os.environ.get("RAY_ADDRESS")
        kwargs: dict[str, Any] = {"log_to_driver": False, "include_dashboard": False, "ignore_reinit_error": True}
        if address:
            kwargs["address"] = address
        elif jobs:
            kwargs["num_cpus"] = jobs
        try:
            ray.init(**kwargs)
        except Exception as exc:
            raise ArtifactError(f"cannot start or reach Ray{f' at {address}' if address else ''}: {exc}") from None
        self.jobs = jobs or max(1, int(ray.cluster_resources().get("CPU", 1)))
        self.remote = ray.remote(_ray_task)

    def _submit(self, task: dict[str, Any]) -> Any:
        opts: dict[str, Any] = {"max_retries": self.retries, "num_cpus": 1,
                                "num_gpus": 1 if needs_accelerator(task["path"], self.device) else 0}
        if self.max_memory:
            opts["memory"] = self.max_memory
        return self.remote.options(**opts).remote(task)

    def run(self, tasks: Sequence[Task], on_done: OnDone) -> None:
        ray = self.ray
        waiting = list(tasks)
        inflight: dict[Any, tuple[str, float]] = {}
        try:
            while waiting or inflight:
                while waiting and len(inflight) < self.jobs:
                    key, task = waiting.pop(0)
                    inflight[self._submit(task)] = (key, time.monotonic())
                ready, _ = ray.wait(list(inflight), num_returns=1, timeout=0.5)
                for ref in ready:
                    key, t0 = inflight.pop(ref)
                    on_done(key, self._result(ref, time.monotonic() - t0))
                now = time.monotonic()
                for ref, (key, t0) in list(inflight.items()):
                    if self.timeout and now - t0 > self.timeout:
                        ray.cancel(ref, force=True)
                        inflight.pop(ref)
                        on_done(key, _failure("timeout", "timeout", f"still running after {self.timeout:g} s; the task was cancelled", now - t0))
        finally:
            for ref in inflight:
                ray.cancel(ref, force=True)
            ray.shutdown()

    def _result(self, ref: Any, seconds: float) -> dict[str, Any]:
        exceptions = self.ray.exceptions
        try:
            return self.ray.get(ref)
        except exceptions.OutOfMemoryError as exc:
            return _failure("crashed", "memory", f"Ray's memory monitor killed the task: {str(exc).splitlines()[0]}", seconds)
        except (exceptions.WorkerCrashedError, exceptions.NodeDiedError, exceptions.RayTaskError) as exc:
            first = next((ln for ln in str(exc).splitlines() if ln.strip()), type(exc).__name__)
            return _failure("crashed", "worker-died", f"{type(exc).__name__}: {first}", seconds)
