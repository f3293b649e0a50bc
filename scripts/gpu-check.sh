#!/usr/bin/env bash
# Run the accelerator-marked artifact tests and the verify benchmark on a machine with a GPU
# (CUDA, XPU or MPS through torch.accelerator). Exits non-zero if the tests fail or if no
# accelerator is visible (the tests would only be skipped).
set -euo pipefail
cd "$(dirname "$0")/.."
PY="${PYTHON:-python}"

"$PY" - <<'PY'
import sys, torch
acc = torch.accelerator.current_accelerator(check_available=True)
if acc is None:
    sys.exit("gpu-check: torch.accelerator finds no device; nothing to check")
print(f"gpu-check: torch {torch.__version__}, accelerator {acc}, {torch.accelerator.device_count()} device(s)")
PY

echo "== accelerator tests"
"$PY" -m pytest tests/artifact -m accelerator -q -rs -p no:cacheprovider

echo "== device-agnostic check: no CUDA-only call in the artifact wing"
if grep -rnE 'torch\.cuda\.|\.cuda\(' migrate/artifact migrate/artifact_cli.py; then
    echo "gpu-check: CUDA-only call found" >&2
    exit 1
fi

echo "== verify benchmark on the accelerator"
"$PY" scripts/bench_artifacts.py --device auto --repeats "${REPEATS:-5}" --skip-latency
