#!/usr/bin/env bash
# Set up, then run the main job over the bundled corpus: each case is a TorchScript-era program of
# its own; for each, scan it (what is there, what apply --unsafe-fixes would hold back and why),
# then show the diff `apply --unsafe-fixes` would write (nothing is written).
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh
VENV=${TS2EXPORT_VENV:-.venv}
for case in corpus/*/*/before; do
  echo "== $case" >&2
  "$VENV/bin/ts2export" scan --unsafe-fixes --no-progress "$case"
  "$VENV/bin/ts2export" diff --unsafe-fixes --no-progress "$case" || [ $? -eq 1 ]
  echo >&2
done
