#!/usr/bin/env bash
# The tests that run programs, against another torch release than the pinned one (issue 29).
#
#   bash scripts/torch_release.sh 2.15.0                 # set up its venv (once), run the checks
#   TESTS="tests/test_corpus.py" bash scripts/torch_release.sh 2.14.1
#
# It makes a venv of its own (~/.cache/ts2export-torch-VERSION, or $TS2EXPORT_RELEASE_VENV) with
# that torch (from the package index: a CUDA build of several GB where no CPU build is published),
# ts2export and its test tools, and ExecuTorch only where the release's wheel accepts it (the pinned
# executorch is built against torch 2.13, so its tests skip). Then it runs the never-broken harness,
# the corpus (goldens, the programs before and after, the recorded mode) and the artifact tests, and
# prints pytest's summary with the torch version. docs/versions.md holds the figures.
set -euo pipefail
cd "$(dirname "$0")/.."
VER=${1:?usage: torch_release.sh TORCH_VERSION}
VENV=${TS2EXPORT_RELEASE_VENV:-$HOME/.cache/ts2export-torch-$VER}
PY=${PYTHON:-python3}
TESTS=${TESTS:-tests/test_never_broken.py tests/test_corpus.py tests/test_record.py tests/test_prove.py tests/artifact}
if [ ! -x "$VENV/bin/python" ]; then
  "$PY" -m venv "$VENV"
fi
if ! "$VENV/bin/python" -c "import torch, sys; sys.exit(torch.__version__.split('+')[0] != '$VER')" 2>/dev/null; then
  start=$(date +%s)
  "$VENV/bin/python" -m pip install -q --disable-pip-version-check "torch==$VER" 2>&1 | grep -v "^WARNING: Location" >&2 || true
  echo "torch $VER installed in $(( $(date +%s) - start )) s; venv size $(du -sh "$VENV" | cut -f1)" >&2
fi
echo "torch==$VER" > "$VENV/constraints.txt"
"$VENV/bin/python" -m pip install -q --disable-pip-version-check -c "$VENV/constraints.txt" -e ".[dev]" numpy 2>&1 \
  | grep -v "^WARNING: Location" >&2 || true
"$VENV/bin/python" -c "import torch; print('torch', torch.__version__, '| torch.jit present:', hasattr(torch.jit, 'script'))"
# --basetemp: its own scratch, so that a run beside the pinned suite does not share pytest's folders
exec "$VENV/bin/python" -m pytest $TESTS -n "${JOBS:-2}" -q -p no:cacheprovider --basetemp="$VENV/pytest-tmp" \
  -W "ignore::DeprecationWarning" "${@:2}"
