"""The engine: from paths to results. It finds the files (``discovery``, ``config``) and the rules
(``registry``; it never names one), checks each file (``check``: pre-filter, parse, the rules in one
batched visit, suppressions; a notebook's code cells as one module: ``notebooks``) and writes fixes (``fixes``), and runs the whole (``run``): every file
checked in worker processes while the program model (``ts2export.model``) is built, the model's
decision of what to hold back, then the fix pass under it. Around a run: the result cache
(``cache``), files it does not process (``skipped``), apply gated by the user's tests (``gated``),
one editor document checked and fixed in memory for the language server (``document``), the corpus
harness (``corpus``) and the rules' generated documentation (``ruledocs``).

Imports: ``ts2export.model``, ``ts2export.rule``, ``ts2export.edits``, ``ts2export.textio`` and the
recording reader (``ts2export.record.recording``); the rules only through ``registry``. Never the
CLI, the CI side or the artifact wing.
"""

from ts2export.engine.check import anchor, decode_for_diff, prefilter, process_bytes, process_file
from ts2export.engine.run import analyze, run
from ts2export.engine.tasks import FileResult, Options, Run, Task, mode_allows, unit_label

__all__ = [
    "FileResult", "Options", "Run", "Task", "analyze", "anchor", "decode_for_diff", "mode_allows", "prefilter",
    "process_bytes", "process_file", "run", "unit_label",
]
