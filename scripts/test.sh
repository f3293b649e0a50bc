#!/usr/bin/env bash
# Set up, then run the whole test suite (rules' examples, engine, CLI, corpus harness, artifacts).
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh
VENV=${TS2EXPORT_VENV:-.venv}
exec "$VENV/bin/python" -m pytest -q -n auto --dist loadgroup "$@"
