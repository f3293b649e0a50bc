#!/usr/bin/env bash
# Serving checks on a machine with an accelerator (CUDA, XPU or MPS through torch.accelerator):
# the accelerator-marked tests, then scripts/gpu_check.py (device constants, float16/bfloat16, a
# planted mismatch, an AOTInductor package, verify --benchmark --graph on torch.cond, .pte lowering,
# and the verify overhead at ResNet scale), which prints every figure.
# Works without executorch (the .pte parts say they are skipped). Without an accelerator it stops
# with one line and exit 1: the checks would only be skipped. Arguments go to gpu_check.py.
set -euo pipefail
cd "$(dirname "$0")/.."
PY="${PYTHON:-python}"

echo "== device-agnostic check: no CUDA-only call in the artifact wing"
# The one exception is marked on each line: torch.cuda.CUDAGraph where torch.accelerator.Graph
# does not exist yet (torch < 2.12).
if grep -rnE 'torch\.cuda\.|\.cuda\(' migrate/artifact | grep -v 'torch<2.12 fallback'; then
    echo "gpu-check: CUDA-only call found" >&2
    exit 1
fi

"$PY" - <<'PY'
import sys, torch
acc = torch.accelerator.current_accelerator(check_available=True)
if acc is None:
    sys.exit("gpu-check: torch.accelerator finds no device; nothing to check (python scripts/gpu_check.py --device cpu rehearses on CPU)")
print(f"gpu-check: torch {torch.__version__}, accelerator {acc}, {torch.accelerator.device_count()} device(s)")
PY

echo "== accelerator tests"
"$PY" -m pytest tests/artifact -m accelerator -q -rs -p no:cacheprovider

echo "== serving checks"
"$PY" scripts/gpu_check.py "$@"
