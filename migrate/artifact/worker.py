"""A worker process of the local executor: `python -m ts2export.artifact.worker`.

Warms up first (imports torch and the pipeline, exports a tiny module: the first torch.export of a
process takes seconds of set-up), so that --timeout bounds the artifact's own work. Then reads one
JSON task per line on stdin, runs it (`storetask.run_task`) and writes one JSON record
per line on the channel the parent handed over (the original stdout). File descriptor 1 itself
is pointed at stderr first, so whatever torch, executorch or a TorchScript `print` writes cannot
corrupt the channel. Exits at the end of stdin (the parent closed it or died).
"""

from __future__ import annotations

import json
import os
import sys


def main() -> int:
    channel = os.fdopen(os.dup(1), "w", encoding="utf-8", buffering=1)
    os.dup2(2, 1)
    sys.stdout = sys.stderr
    from ts2export.artifact.storetask import quiet, run_task

    with quiet():  # torch, the pipeline and export's first-use set-up before any task's clock starts
        import torch

        import ts2export.artifact.pipeline  # noqa: F401

        torch.export.export(torch.nn.Linear(2, 2), (torch.randn(2, 2),))

    channel.write(json.dumps({"ready": True}) + "\n")
    for line in sys.stdin:
        if not line.strip():
            continue
        task = json.loads(line)
        record = run_task(task)
        channel.write(json.dumps(record) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
