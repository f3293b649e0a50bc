#!/usr/bin/env bash
# Set up, then run the main job over the bundled corpus: `apply --unsafe-fixes` on each of its
# TorchScript-era programs, in memory (nothing is written but the HTML report), told in a page: the
# findings per rule, what is held back and why, two of the diffs, and where the report went.
# `bash scripts/demo.sh --full` prints every case's findings and diff instead.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh
VENV=${TS2EXPORT_VENV:-.venv}
exec "$VENV/bin/python" -m ts2export.harness.demo "$@"
