"""The engine: from paths to results. It finds the files (``discovery``, ``config``) and the rules
(``registry``; it never names one), checks each file (``check``: pre-filter, parse, the rules in one
batched visit, suppressions; a notebook's code cells as one module: ``notebooks``) and writes fixes (``fixes``), and runs the whole (``analysis``: ``analyze`` and ``run``): every file
checked in worker processes while the program model (``ts2export.model``) is built, the model's
decision of what to hold back, then the fix pass under it. Around a run: the result cache
(``cache``), files it does not process (``skipped``), apply gated by the user's tests (``gated``),
one editor document checked and fixed in memory for the language server (``document``), the corpus
harness (``corpus``) and the rules' generated documentation (``ruledocs``).

Imports: ``ts2export.model``, ``ts2export.rule``, ``ts2export.edits``, ``ts2export.textio`` and the
recording reader (``ts2export.record.recording``); the rules only through ``registry``. Never the
CLI, the CI side or the artifact wing.
"""

import importlib

# Each name is imported from its module when first asked for (PEP 562): `ts2export.engine.config` or
# `.cache` alone (a run read back from the cache) does not import the checking machinery and libcst.
_WHERE = {
    "anchor": "check", "decode_for_diff": "check", "prefilter": "check", "process_bytes": "check",
    "process_file": "check", "analyze": "analysis", "run": "analysis", "FileResult": "tasks", "Options": "tasks",
    "Run": "tasks", "Task": "tasks", "mode_allows": "tasks", "unit_label": "tasks",
}


def __getattr__(name: str):
    where = _WHERE.get(name)
    if where is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    value = getattr(importlib.import_module(f"ts2export.engine.{where}"), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted([*globals(), *_WHERE])


__all__ = [
    "FileResult", "Options", "Run", "Task", "analyze", "anchor", "decode_for_diff", "mode_allows", "prefilter",
    "process_bytes", "process_file", "run", "unit_label",
]
