#!/usr/bin/env bash
# Set up, then run the main job over the bundled corpus: scan the TorchScript-era programs, then
# show the diff `apply --unsafe-fixes` would write to each (nothing is written).
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh
VENV=${TS2EXPORT_VENV:-.venv}
echo "== ts2export scan corpus/*/*/before" >&2
"$VENV/bin/ts2export" scan corpus/*/*/before
echo >&2
echo "== ts2export diff --unsafe-fixes, case by case (exit 1 = changes pending; nothing is written)" >&2
for case in corpus/*/*/before; do
  "$VENV/bin/ts2export" diff --unsafe-fixes "$case" || [ $? -eq 1 ]
done
