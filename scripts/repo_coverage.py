#!/usr/bin/env python3
"""How much of a repository `apply --unsafe-fixes` migrates, and what holds the rest back.

For each tree (a fetched repository; nothing is downloaded here) it runs the engine as `apply
--unsafe-fixes` would (program model, decision and fix pass, in memory: nothing is written) and
prints the findings, the share it would fix, and the findings it leaves, by cause:

- **no fix**: the rule has no rewrite for it (or not in this mode);
- **unfollowable entry point**: held back because a script or trace call whose target ts2export
  cannot follow may compile it;
- **compiled or traced**: held back because an entry point that stays TorchScript compiles or
  traces the code it is in;
- **unit**: held back with the rest of its unit (a call site of it stays);
- **export would stop**: held back because the code the entry point exports keeps a construct
  torch.export rejects;
- **other holds**: any other reason (a recording's failed proof, a rolled-back unit, ...).

Then, per tree, the entry points that hold the most fixes back (the one-line answer to "what
freezes this repository"), with counts.

    python scripts/repo_coverage.py ../pytorch-image-models ../schnetpack [--jobs 2] [--json out.json]

Asserts nothing; the figures go to docs/callsites.md.
"""

from __future__ import annotations

import argparse
import json
import re
import sys
import time
from collections import Counter
from pathlib import Path

CAUSES = ("no fix", "unfollowable entry point", "compiled or traced", "unit", "export would stop", "other holds")
_THROUGH = re.compile(r"through (`[^`]*` (?:at|on) [^,]*?), which stays")


def cause(held: str | None) -> str:
    if not held:
        return "no fix"
    if "cannot follow" in held:
        return "unfollowable entry point"
    if "is still compiled by TorchScript" in held or "is still traced by TorchScript" in held:
        return "compiled or traced"
    if "migrates together with" in held or "stays TorchScript" in held or held.startswith("`"):
        return "unit"
    if "torch.export would stop" in held:
        return "export would stop"
    return "other holds"


def measure(root: Path, jobs: int | None, unfollowable: bool = False) -> dict:
    from ts2export.engine import Options, Task, analyze
    from ts2export.engine.discovery import discover

    start = time.perf_counter()
    files = discover([root], root, [])
    tasks = [Task(str(f.path), f.kind) for f in files]
    options = Options(fix="unsafe", plan="unsafe", rule_options={"inputs": {}, "root": str(root)},
                      migrate_unfollowable=unfollowable)
    results = analyze(tasks, options, jobs=jobs).results
    fixed = sum(len(r.fixed) for r in results)
    left = Counter()
    holders = Counter()
    for r in results:
        for f in r.findings:
            c = cause(f.held)
            left[c] += 1
            if f.held:
                m = _THROUGH.search(f.held)
                if m:
                    holders[m.group(1)] += 1
    total = fixed + sum(left.values())
    return {"tree": str(root), "files": len(files), "findings": total, "fixed": fixed, "left": dict(left),
            "holders": holders.most_common(5), "seconds": round(time.perf_counter() - start, 1)}


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("trees", nargs="+", type=Path)
    parser.add_argument("--jobs", "-j", type=int, default=None)
    parser.add_argument("--json", type=Path, help="also write the figures here")
    parser.add_argument("--migrate-unfollowable", action="store_true",
                        help="measure with `migrate-unfollowable = true` (see docs/units.md)")
    args = parser.parse_args(argv)
    rows = [measure(t.resolve(), args.jobs, args.migrate_unfollowable) for t in args.trees]
    print("| tree | files | findings | fixed by apply --unsafe-fixes | " + " | ".join(CAUSES) + " | s |")
    print("|---|---|---|---|" + "---|" * len(CAUSES) + "---|")
    for row in rows:
        share = row["fixed"] / row["findings"] if row["findings"] else 0.0
        print(f"| {Path(row['tree']).name} | {row['files']} | {row['findings']} | {row['fixed']} ({share:.0%}) | "
              + " | ".join(str(row["left"].get(c, 0)) for c in CAUSES) + f" | {row['seconds']} |")
    total = sum(r["findings"] for r in rows)
    fixed = sum(r["fixed"] for r in rows)
    print(f"\nIn all: {fixed} of {total} findings fixed ({fixed / total if total else 0:.0%}).")
    for row in rows:
        if row["holders"]:
            print(f"\n{Path(row['tree']).name}: entry points holding fixes back")
            for where, n in row["holders"]:
                print(f"  {n:5d}  {where}")
    if args.json:
        args.json.write_text(json.dumps(rows, indent=2) + "\n", encoding="utf-8")
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
