#!/usr/bin/env bash
# Set up, then run the whole test suite (rules' examples, engine, CLI, corpus harness, artifacts).
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh
VENV=${TS2EXPORT_VENV:-.venv}
# --durations=25: the slowest tests are listed at the end of every run (docs/speed.md keeps a record)
exec "$VENV/bin/python" -m pytest -q -n auto --dist loadgroup --durations=25 "$@"
