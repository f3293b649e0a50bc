"""Model-store throughput: artifacts per minute of `migrate-artifact STORE` with --jobs 1, --jobs 2
and on a local Ray instance, against a sequential loop that runs the single-file command
(`ts2export migrate-artifact FILE.pt --inputs ...`) in a subprocess per artifact, all on the same
generated store (tests/artifact/storegen.py). Prints figures and ratios; asserts nothing.

    python scripts/bench_store.py [--size 40] [--lower] [--skip-ray]

Every run gets the same options (--no-lower unless --lower, --samples 1), a fresh output folder,
and the same inputs per artifact (its sidecar or manifest inputs file; artifacts without inputs
fail fast in both). The store runs are cold: worker start-up (importing torch) is included.
"""

from __future__ import annotations

import argparse
import os
import shlex
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from tests.artifact.storegen import expected_totals, generate  # noqa: E402

TS2EXPORT = [sys.executable, "-m", "ts2export"]


def inputs_of(root: Path) -> dict[str, str]:
    """Relative path -> inputs file, from the manifest's options and the sidecars."""
    found = {}
    for line in (root / "manifest.txt").read_text().splitlines():
        words = shlex.split(line, comments=True)
        if "--inputs" in words:
            found[words[0]] = str(root / words[words.index("--inputs") + 1])
    for side in root.rglob("*.inputs.pt"):
        rel = side.relative_to(root).as_posix().removesuffix(".inputs.pt") + ".pt"
        found.setdefault(rel, str(side))
    return found


def single_file_loop(root: Path, out: Path, options: list[str]) -> tuple[float, int]:
    inputs = inputs_of(root)
    files = sorted(p.relative_to(root).as_posix() for p in root.rglob("*.pt") if not p.name.endswith((".inputs.pt",)))
    t0 = time.perf_counter()
    ok = 0
    for rel in files:
        extra = ["--inputs", inputs[rel]] if rel in inputs else []
        proc = subprocess.run([*TS2EXPORT, "migrate-artifact", str(root / rel), "--out", str(out / rel[:-3]), *extra, *options],
                              capture_output=True, text=True)
        ok += proc.returncode == 0
    return time.perf_counter() - t0, ok


def store_run(root: Path, out: Path, options: list[str], extra: list[str]) -> tuple[float, str]:
    t0 = time.perf_counter()
    proc = subprocess.run([*TS2EXPORT, "migrate-artifact", str(root / "manifest.txt"), "--out", str(out), *options, *extra],
                          capture_output=True, text=True, env={**os.environ, "RAY_ADDRESS": ""})
    seconds = time.perf_counter() - t0
    if proc.returncode not in (0, 1):
        return seconds, f"failed: {proc.stderr.strip()[-300:]}"
    return seconds, proc.stdout.strip().splitlines()[-2]


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--size", type=int, default=40, help="artifacts in the generated store (default 40)")
    ap.add_argument("--lower", action="store_true", help="also lower every artifact to .pte (slow)")
    ap.add_argument("--skip-ray", action="store_true")
    args = ap.parse_args()
    options = ["--samples", "1", "--no-progress"] + ([] if args.lower else ["--no-lower"])
    with tempfile.TemporaryDirectory() as tmp:
        tmp = Path(tmp)
        root = tmp / "store"
        planted = generate(root, args.size, no_inputs=2, corrupt=2)
        # a store run honours the manifest's per-entry --lower; the loop gets one set of options
        manifest = root / "manifest.txt"
        manifest.write_text(manifest.read_text().replace(" --lower", ""))
        print(f"store: {args.size} artifacts ({expected_totals(planted)}), options: {' '.join(options)}; "
              f"{os.cpu_count()} CPU(s)")
        loop_s, ok = single_file_loop(root, tmp / "loop", [o for o in options if o != "--no-progress"])
        rate = lambda s: 60.0 * args.size / s  # noqa: E731
        print(f"{'sequential single-file loop':32s} {loop_s:7.1f} s  {rate(loop_s):6.1f} artifacts/min  ({ok} exit 0)")
        runs = [("store --jobs 1", ["--jobs", "1"]), ("store --jobs 2", ["--jobs", "2"])]
        if not args.skip_ray:
            try:
                import ray  # noqa: F401

                runs.append(("store --executor ray --jobs 2", ["--executor", "ray", "--jobs", "2"]))
            except ImportError:
                print("ray: not installed, skipped (pip install 'ts2export[ray]')")
        for name, extra in runs:
            seconds, summary = store_run(root, tmp / name.replace(" ", "_"), options, extra)
            print(f"{name:32s} {seconds:7.1f} s  {rate(seconds):6.1f} artifacts/min  {loop_s / seconds:4.1f}x the loop  ({summary})")


if __name__ == "__main__":
    main()
