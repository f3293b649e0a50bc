#!/usr/bin/env bash
# Create .venv (or $TS2EXPORT_VENV) with ts2export and everything its tests need.
# torch is pinned first (constraints.txt) so pip never resolves it to a multi-GB CUDA build.
set -euo pipefail
cd "$(dirname "$0")/.."
VENV=${TS2EXPORT_VENV:-.venv}
PY=${PYTHON:-python3}
if [ ! -x "$VENV/bin/python" ]; then
  "$PY" -m venv "$VENV"
fi
"$VENV/bin/python" -m pip install -q --disable-pip-version-check -c constraints.txt torch
"$VENV/bin/python" -m pip install -q --disable-pip-version-check -c constraints.txt -e ".[dev,edge]"
echo "ts2export is set up in $VENV ($("$VENV/bin/ts2export" --version))" >&2
