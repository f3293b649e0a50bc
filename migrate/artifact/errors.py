"""Errors a user can cause. The CLI prints `error: <message>` and exits with `exit_code`."""

from __future__ import annotations

import re

EXIT_OK = 0
EXIT_MISMATCH = 1
EXIT_ERROR = 2


class ArtifactError(Exception):
    """A failure that is reported as one line, never as a traceback."""

    exit_code = EXIT_ERROR

    def __init__(self, message: str) -> None:
        super().__init__(message)
        self.message = message

    def __str__(self) -> str:
        return self.message


def one_line(exc: BaseException, limit: int = 300) -> str:
    """First meaningful line of an exception message, shortened. For an error raised inside the
    TorchScript interpreter, whose first line only says so, the final `...Error: message` line."""
    text = str(exc).strip() or type(exc).__name__
    if text.startswith("The following operation failed in the TorchScript interpreter"):
        causes = [line.strip() for line in text.splitlines() if re.match(r"^\s*\w*(Error|Exception): ", line)]
        if causes:
            text = causes[-1]
    for line in text.splitlines():
        line = line.strip()
        if line:
            text = line
            break
    if len(text) > limit:
        text = text[: limit - 3] + "..."
    return text
