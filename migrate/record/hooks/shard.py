"""This process's recording: its bounds, its call sites (each aggregating the inputs of its
methods, :mod:`.inputs`), and the shard file it is written to.

The shard is one JSON snapshot, replaced atomically, written when something new is seen, at most a
second after counts change, and at exit (see :func:`flush`). After a fork the child keeps the
parent's sites with their counts dropped and starts a shard of its own (:func:`after_fork`).
Standard library only.
"""

from __future__ import annotations

import json
import os
import sys
import threading
import time

# Bounds: the recording stays small whatever the program does. Calls past a bound are counted.
MAX_SHAPE_KEYS = 256  # distinct input signatures cached per method (later new ones are analysed, not cached)
MAX_VARIANTS = 16  # distinct structures/dtypes/ranks per method
MAX_SIZES = 32  # distinct sizes kept per dim
MAX_CONST_VALUES = 8  # distinct values kept per non-tensor input
MAX_SAMPLES = 3  # real input samples per method and process
MAX_SAMPLE_BYTES = 1 << 20  # per sample
MAX_PROCESS_SAMPLE_BYTES = 16 << 20  # per process
VALUE_RANGE_FIRST = 4  # integer value ranges: every call of a signature's first calls...
VALUE_RANGE_EVERY = 256  # ...then one call in this many
FLUSH_SECONDS = 1.0  # counts reach the shard at most this late
NOVEL_FLUSHES = 500  # novelties written at once; past that, at most one write per FLUSH_SECONDS
MAX_SAVED_PATHS = 16
_INTEGER_DTYPES = ("int8", "int16", "int32", "int64", "uint8", "uint16", "uint32", "uint64")


folder: str | None = None  # where shards go; None until the recorder is installed
lock = threading.RLock()  # replaced in a forked child
sites: dict = {}  # (kind, file, line, col, target) -> inputs._Site
state = {"dirty": False, "last": 0.0, "novel_flushes": 0, "nonce": "", "errors": 0, "error": None,
         "sample_bytes": 0, "samples": 0, "flushing": False, "patched": False}
torch = None  # the program's torch, once it imports it (its version goes in the shard)


def start(shard_dir: str) -> None:
    """Record into `shard_dir` from now on."""
    global folder, MAX_SAMPLES
    folder = shard_dir
    try:
        MAX_SAMPLES = max(0, int(os.environ.get("TS2EXPORT_RECORD_SAMPLES", MAX_SAMPLES)))
    except ValueError:
        pass
    new_nonce()


def bind(module) -> None:
    global torch
    torch = module


def new_nonce() -> None:
    state["nonce"] = f"{os.getpid()}-{os.urandom(4).hex()}"


def error(exc: BaseException) -> None:
    """Count a failure inside the recorder (never raised into the program)."""
    state["errors"] += 1
    if state["error"] is None:
        state["error"] = f"{type(exc).__name__}: {exc}"[:300]
    state["dirty"] = True


def flush_soon(novel: bool = False) -> None:
    state["dirty"] = True
    now = time.monotonic()
    if novel and state["novel_flushes"] < NOVEL_FLUSHES:
        state["novel_flushes"] += 1
        flush()
    elif now - state["last"] >= FLUSH_SECONDS:
        flush()


def flush(final: bool = False) -> None:
    """Write this process's snapshot (atomically replacing the previous one) when it changed.
    A forked worker that recorded nothing writes no shard."""
    if folder is None or state["flushing"] or not state["dirty"]:
        return
    if not sites and not state["errors"]:
        return
    state["flushing"] = True
    try:
        with lock:
            snapshot = {
                "format": "ts2export-record-shard",
                "version": 1,
                "pid": os.getpid(),
                "ppid": os.getppid(),
                "argv": list(getattr(sys, "argv", []))[:32],
                "cwd": os.getcwd(),
                "torch": getattr(torch, "__version__", None),
                "final": final,
                "errors": state["errors"],
                "error": state["error"],
                "sites": [s.to_json() for s in sites.values()],
            }
            state["dirty"] = False
            state["last"] = time.monotonic()
        data = json.dumps(snapshot, separators=(",", ":"))
        path = os.path.join(folder, f"shard-{state['nonce']}.json")
        tmp = path + ".tmp"
        with open(tmp, "w", encoding="utf-8") as fh:
            fh.write(data)
        os.replace(tmp, path)
    except Exception as exc:  # the folder may be gone (the recorder ended first): stay silent
        state["errors"] += 1
        if state["error"] is None:
            state["error"] = f"{type(exc).__name__}: {exc}"[:300]
    finally:
        state["flushing"] = False


def after_fork() -> None:
    """In a forked child: keep what is registered, drop the parent's counts, start a new shard."""
    global lock
    lock = threading.RLock()
    new_nonce()
    state.update(dirty=False, last=time.monotonic(), novel_flushes=0, sample_bytes=0, samples=0,
                 flushing=False, errors=0, error=None)
    for site in sites.values():
        site.reset()
