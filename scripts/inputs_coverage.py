#!/usr/bin/env python3
"""How many `torch.jit.script`/`trace` call sites of a code base get example inputs.

Runs the engine (program model included, as `ts2export scan --unsafe-fixes` does) over each tree
and classifies every module entry point it reports (TSX301 trace, TSX302 script of a module,
TSX308 trace_module):

- **inputs (local)**: the call site shows them itself or in its scope (a trace's example, a hint,
  the config, the first call, a trace of the same module, an example-named tensor): what
  ts2export found before the program model read the rest of the program;
- **inputs (program)**: they come from the rest of the program (the artifact loaded back and
  called, the object called later, the model class called in the tests), or a size-1 example dim
  called at other sizes was doubled;
- **no inputs**: refused for want of inputs (nothing shows them, a batch-1 example with no other
  size in sight, an example whose rank or structure is not visible);
- **other**: refused for another reason (a recurrent layer, an object that may be a function, ...).

The table gives the first class ("at the call site") and the first two ("with the program model"),
as shares of all entry points. The first column is not what an older ts2export found: the call-site
rules learned too (a name assigned again in one block, say). To measure an older release, run this
script with that release's `ts2export` first on `PYTHONPATH` (docs/callsites.md shows how).

    python scripts/inputs_coverage.py corpus/*/*/before --label corpus
    python scripts/inputs_coverage.py --download e3nn==0.6.0 --download torchvision==0.29.1
"""

from __future__ import annotations

import argparse
import subprocess
import sys
import tempfile
import zipfile
import tarfile
from pathlib import Path

ENTRY_RULES = ("TSX301", "TSX302", "TSX308")
NO_INPUTS = ("needs example inputs", "has size 1 in dimension 0", "has size 0 in dimension 0",
             "cannot tell the rank of the example", "cannot see the elements of the example",
             "cannot tell whether the example", "no example inputs")
EAGER = "the module runs eager"
FROM_PROGRAM = ("example inputs from the calls of the module", "example doubled")


def classify(message: str, fixable: bool) -> str:
    if any(p in message for p in FROM_PROGRAM):
        return "program"
    if any(p in message for p in NO_INPUTS):
        return "none"
    if EAGER in message:  # fixed, but not exported: no inputs were found (the message says why)
        return "other"
    if fixable or "is deprecated" in message:
        return "local"
    return "other"


def measure(paths: list[Path]) -> dict[str, int]:
    from ts2export.engine.discovery import discover
    from ts2export.engine import Options, Task, analyze

    counts = {"local": 0, "program": 0, "none": 0, "other": 0}
    files = discover(paths, paths[0] if paths[0].is_dir() else paths[0].parent, [])
    tasks = [Task(str(f.path), f.kind) for f in files]
    run = analyze(tasks, Options(plan="unsafe"), jobs=None)
    for r in run.results:
        for f in r.findings:
            if f.rule_id in ENTRY_RULES:
                counts[classify(f.message, f.applicability.value != "none")] += 1
    return counts


def fetch(spec: str, into: Path) -> Path:
    """Download a package's sdist (its tests too, as scripts/real_packages.py measures it; else its
    wheel) without installing it, and unpack its sources."""
    pip = [sys.executable, "-m", "pip", "download", "--no-deps", "-q", "-d", str(into)]
    if subprocess.run([*pip, "--no-binary", ":all:", spec], capture_output=True).returncode != 0:
        subprocess.run([*pip, spec], check=True)
    archive = next(p for p in into.iterdir() if p.suffix in (".whl", ".gz", ".zip"))
    target = into / "src"
    if archive.suffix == ".whl" or archive.suffix == ".zip":
        with zipfile.ZipFile(archive) as z:
            z.extractall(target)
    else:
        with tarfile.open(archive) as t:
            t.extractall(target, filter="data")
    return target


def row(label: str, counts: dict[str, int]) -> str:
    total = sum(counts.values())
    before = counts["local"]
    after = counts["local"] + counts["program"]
    pct = (lambda n: f"{100 * n / total:.0f}%") if total else (lambda n: "-")
    return (f"| {label} | {total} | {before} ({pct(before)}) | {after} ({pct(after)}) | {counts['none']} | "
            f"{counts['other']} |")


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("paths", nargs="*", type=Path, help="trees to measure together (one code base)")
    parser.add_argument("--label", default=None, help="the name of the code base given as paths")
    parser.add_argument("--each", action="store_true", help="measure each path as its own code base and add them up")
    parser.add_argument("--download", action="append", default=[], metavar="PKG==VER",
                        help="also measure a package's published sources (its sdist, else its wheel; not installed)")
    args = parser.parse_args(argv)
    print("| code base | entry points | inputs at the call site | inputs with the program model | no inputs | other refusals |")
    print("|---|---|---|---|---|---|")
    if args.paths:
        if args.each:
            total = {"local": 0, "program": 0, "none": 0, "other": 0}
            for p in args.paths:
                for k, v in measure([p]).items():
                    total[k] += v
            print(row(args.label or "paths", total), flush=True)
        else:
            print(row(args.label or ", ".join(str(p) for p in args.paths), measure(args.paths)), flush=True)
    for spec in args.download:
        with tempfile.TemporaryDirectory(prefix="ts2export-cov-") as tmp:
            src = fetch(spec, Path(tmp))
            print(row(spec, measure([src])), flush=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
