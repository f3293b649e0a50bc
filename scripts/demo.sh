#!/usr/bin/env bash
# Set up, then run the main job over the bundled corpus: scan it, then show the diff `apply` would write.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh
VENV=${TS2EXPORT_VENV:-.venv}
echo "== ts2export scan corpus/" >&2
"$VENV/bin/ts2export" scan corpus/
echo "== ts2export diff --unsafe-fixes corpus/   (exit 1 = changes pending; nothing is written)" >&2
"$VENV/bin/ts2export" diff --unsafe-fixes corpus/ || [ $? -eq 1 ]
