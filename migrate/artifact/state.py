"""The run state of a model-store migration: `<out>/.ts2export-state.jsonl`.

One JSON line per finished artifact, appended with a single ``write`` on a file opened with
``O_APPEND`` and flushed to disk before the next artifact is recorded, so an interrupted run (Ctrl-C,
a killed process, a lost machine) leaves at most one torn last line, which is ignored when read.
Each line holds the artifact's record and its key: the relative path, the sha256 of the file's
bytes and the hash of the options that shape its outputs (including its inputs, by content). A later
run with the same key reuses the record instead of migrating again; a changed file, changed inputs
or changed options make a new key, and the artifact is migrated again.
"""

from __future__ import annotations

import hashlib
import json
import os
from pathlib import Path
from typing import Any

STATE_FILE = ".ts2export-state.jsonl"


def options_hash(options: dict[str, Any]) -> str:
    """sha256 of the options (JSON, keys sorted), first 16 hex digits."""
    text = json.dumps(options, sort_keys=True, separators=(",", ":"), default=str)
    return hashlib.sha256(text.encode("utf-8")).hexdigest()[:16]


def state_key(rel: str, sha256: str, opts: str) -> str:
    return f"{rel}\0{sha256}\0{opts}"


class RunState:
    """The records of finished artifacts, by key; `add` appends one durably."""

    def __init__(self, out: Path) -> None:
        self.path = out / STATE_FILE
        self.records: dict[str, dict[str, Any]] = {}
        self.torn = 0  # lines that could not be read (an interrupted write)
        if self.path.is_file():
            with open(self.path, encoding="utf-8", errors="replace") as fh:
                for line in fh:
                    try:
                        item = json.loads(line)
                        self.records[item["key"]] = item["record"]
                    except (ValueError, KeyError, TypeError):
                        self.torn += 1

    def get(self, key: str) -> dict[str, Any] | None:
        return self.records.get(key)

    def add(self, key: str, record: dict[str, Any]) -> None:
        line = json.dumps({"key": key, "record": record}, sort_keys=True) + "\n"
        fd = os.open(self.path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)
        try:
            if os.fstat(fd).st_size and not self._ends_with_newline():
                line = "\n" + line  # after a torn line: start a fresh one
            os.write(fd, line.encode("utf-8"))
            os.fsync(fd)
        finally:
            os.close(fd)
        self.records[key] = record

    def _ends_with_newline(self) -> bool:
        with open(self.path, "rb") as fh:
            fh.seek(-1, os.SEEK_END)
            return fh.read(1) == b"\n"
