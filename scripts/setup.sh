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
pip_install() {  # pip, minus the mirror's "Location ... is ignored" noise; fails when pip fails
  local log rc=0
  log=$(mktemp)
  "$VENV/bin/python" -m pip install -q --disable-pip-version-check -c constraints.txt "$@" >"$log" 2>&1 || rc=$?
  grep -v "^WARNING: Location" "$log" >&2 || true
  rm -f "$log"
  return $rc
}
pip_install torch
# ray: migrate-artifact --executor ray, tested on a local Ray instance (tests/artifact/test_store.py)
pip_install -e ".[dev,torch,edge,ray]"
echo "ts2export is set up in $VENV ($("$VENV/bin/ts2export" --version))" >&2
