"""Fuzz the engine for as long as asked: hypothesmith programs (and quick fragment programs) with
TorchScript constructs spliced in, checked through `ts2export.engine.process_bytes` in every fix
mode (scan, "safe", "unsafe") against the properties of tests/fuzzing.py. Every failing input
(shrunk by hypothesis) is saved as a regression case under tests/fuzz_regressions/, which
tests/test_fuzz_regressions.py replays.

    python scripts/fuzz.py --minutes 10          # needs the dev extra (hypothesis, hypothesmith)

Prints, at the end: examples run, minutes, failures found (and the files saved). Exit 1 when
something failed.
"""

from __future__ import annotations

import argparse
import sys
import time
import warnings
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))  # for tests.fuzzing


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--minutes", type=float, default=10.0, help="how long to fuzz (default 10)")
    parser.add_argument("--seed", type=int, default=None, help="seed of the first batch (default: random)")
    parser.add_argument("--batch", type=int, default=25, help="examples per hypothesis run (default 25)")
    parser.add_argument("--no-grammar", action="store_true", help="only the quick fragment programs, no hypothesmith")
    parser.add_argument("--out", type=Path, default=None, help="where failing inputs go (default tests/fuzz_regressions)")
    args = parser.parse_args(argv)

    warnings.simplefilter("ignore")
    import random

    from hypothesis import given, seed, settings
    from hypothesis.errors import HypothesisException

    from tests import fuzzing

    out = args.out or fuzzing.REGRESSIONS
    deadline = time.monotonic() + args.minutes * 60
    base_seed = args.seed if args.seed is not None else random.SystemRandom().randrange(2**32)
    stats = {"examples": 0, "checks": 0}
    origins: dict[str, int] = {}
    failures: list[tuple[str, Path]] = []
    last: dict = {}

    strategy = fuzzing.samples(grammar=not args.no_grammar)

    def one(sample) -> None:
        if time.monotonic() > deadline:
            return
        stats["examples"] += 1
        origins[sample.origin] = origins.get(sample.origin, 0) + 1
        for fix in fuzzing.FIX_MODES:
            stats["checks"] += 1
            problems = fuzzing.check(sample, fix)
            if problems:
                last.update(sample=sample, fix=fix, problems=problems)
                raise AssertionError(problems[0])

    start = time.monotonic()
    batch = 0
    print(f"fuzzing for {args.minutes:g} min, first seed {base_seed}", flush=True)
    while time.monotonic() < deadline:
        test = seed(base_seed + batch)(settings(settings.get_profile("fuzz"), max_examples=args.batch)(given(strategy)(one)))
        last.clear()
        try:
            test()
        except (AssertionError, HypothesisException, Exception) as exc:  # noqa: BLE001 - report and go on
            if last:
                path = fuzzing.save_regression(last["sample"], last["fix"], last["problems"], out)
                failures.append((last["problems"][0], path))
                print(f"FAILURE (fix={last['fix']}): {last['problems'][0]}\n  saved {path}", flush=True)
            else:
                print(f"batch {batch} stopped: {type(exc).__name__}: {exc}", flush=True)
        batch += 1
        minutes = (time.monotonic() - start) / 60
        print(f"  {minutes:5.1f} min: {stats['examples']} examples, {stats['checks']} checks, {len(failures)} failures", flush=True)

    minutes = (time.monotonic() - start) / 60
    print(f"\nexamples run: {stats['examples']} ({stats['checks']} property checks, 3 fix modes each)")
    print("programs: " + ", ".join(f"{n} {origin}" for origin, n in sorted(origins.items())))
    print(f"minutes: {minutes:.1f}")
    print(f"failures found: {len(failures)}")
    for problem, path in failures:
        print(f"  {path.relative_to(ROOT) if path.is_relative_to(ROOT) else path}: {problem}")
    return 1 if failures else 0


if __name__ == "__main__":
    raise SystemExit(main())
