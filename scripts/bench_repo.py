"""Speed at repository scale: ts2export over the installed torch package's own Python source.

Copies the ``.py`` files of the installed ``torch`` (``--quick``: ``torch/nn`` only) into a
temporary folder (discovery skips ``site-packages``), then measures, each in its own process:

* baselines, in this same run: ``grep -rl jit`` over the tree, and a plain ``libcst`` parse (no
  metadata) of the candidate files (those whose text triggers a Python rule);
* ``ts2export check`` and ``scan`` cold (empty cache) and warm (nothing changed), ``check``
  without the cache, on the fast path and on the full path (``TS2EXPORT_FULL_METADATA=1``: every
  libcst metadata provider up front, the reference the fast path is checked against), and
  ``diff`` cold (``--runs`` picks some of these);
* generated files of N lines ``v = torch.jit.annotate(int, i)`` (one finding a line): ``check``
  and ``apply`` at several N, to show how cost grows with the findings of one file;
* where the time goes (cProfile of one in-process run over the tree, one job, no cache: the
  engine's phases, the rules' own code and the top functions; ``--no-profile`` skips it).

Prints files, lines, wall and CPU seconds (user + system of the process and its workers), peak
memory (largest resident set of one process) and ratios against the baselines. The machine may be
shared: CPU seconds are the steadier figure. Asserts nothing.

    python scripts/bench_repo.py [--quick] [--jobs 2] [--findings 1000,4000] [--no-profile]
                                 [--runs check-cold,check-warm,diff]
"""

from __future__ import annotations

import argparse
import importlib.util
import os
import resource
import shutil
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

HERE = Path(__file__).resolve().parent


@dataclass
class Measure:
    name: str
    wall: float
    cpu: float
    peak_mib: float
    rc: int
    note: str = ""


def measure(name: str, cmd: list[str], cwd: Path, env: dict | None = None, note: str = "") -> Measure:
    """Run ``cmd`` and return its wall time, CPU time (user + system, its reaped children
    included) and peak resident set (the largest of the process and its children)."""
    start = time.perf_counter()
    proc = subprocess.Popen(cmd, cwd=cwd, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    _, status, usage = os.wait4(proc.pid, 0)
    wall = time.perf_counter() - start
    proc.returncode = os.waitstatus_to_exitcode(status)
    err = proc.stderr.read().decode(errors="replace") if proc.stderr else ""
    if proc.stderr:
        proc.stderr.close()
    if proc.returncode not in (0, 1):
        print(f"  ! {name} exited {proc.returncode}: {err.strip().splitlines()[-1] if err.strip() else ''}", file=sys.stderr)
    return Measure(name, wall, usage.ru_utime + usage.ru_stime, usage.ru_maxrss / 1024, proc.returncode, note)


def torch_source() -> Path:
    spec = importlib.util.find_spec("torch")  # found, not imported
    if spec is None or not spec.submodule_search_locations:
        raise SystemExit("torch is not installed in this interpreter")
    return Path(list(spec.submodule_search_locations)[0])


def copy_python(src: Path, dst: Path) -> tuple[int, int, int]:
    """Copy the .py files of ``src`` under ``dst``; returns (files, lines, bytes)."""
    files = lines = size = 0
    for folder, dirs, names in os.walk(src):
        dirs[:] = sorted(d for d in dirs if d != "__pycache__")
        for name in names:
            if not name.endswith(".py"):
                continue
            source = Path(folder) / name
            target = dst / source.relative_to(src.parent)
            target.parent.mkdir(parents=True, exist_ok=True)
            data = source.read_bytes()
            target.write_bytes(data)
            files += 1
            lines += data.count(b"\n")
            size += len(data)
    return files, lines, size


PARSE_CANDIDATES = r"""
import sys, pathlib
import libcst as cst
from ts2export.engine import prefilter
from ts2export.engine.registry import select_rules
from ts2export.rule import Rule
rules = [r for r in select_rules((), ()) if issubclass(r, Rule)]
n = 0
for path in sorted(pathlib.Path(sys.argv[1]).rglob("*.py")):
    data = path.read_bytes()
    if prefilter(data, rules):
        try:
            cst.parse_module(data)
        except Exception:
            pass
        n += 1
print(n)
"""


def compile_bytecode() -> str:
    """Compile the tool's modules to bytecode, as ``pip install`` does: an editable install under
    ``PYTHONDONTWRITEBYTECODE=1`` (this project's machines) would otherwise compile every module
    from source in every process of every run, which no installed copy does."""
    import compileall

    folders = []
    for name in ("ts2export", "ts2export.rules"):  # the rules are a folder of their own (see pyproject.toml)
        spec = importlib.util.find_spec(name)
        folders += [f for f in (spec.submodule_search_locations or []) if f not in folders] if spec else []
    ok = all(compileall.compile_dir(folder, quiet=1) for folder in folders)
    return f"bytecode of {len(folders)} package folders compiled up front, as an install does{'' if ok else ' (some failed)'}"


def count_candidates(root: Path) -> int:
    out = subprocess.run([sys.executable, "-c", PARSE_CANDIDATES.replace("cst.parse_module(data)", "pass"), str(root)],
                         capture_output=True, text=True, check=True)
    return int(out.stdout.strip())


def ts2export(*args: str) -> list[str]:
    return [sys.executable, "-m", "ts2export", *args]


def table(rows: list[Measure], files: int, lines: int, grep: Measure | None, parse: Measure | None) -> None:
    print(f"{'':<34}{'wall s':>9}{'cpu s':>9}{'peak MiB':>10}{'x grep':>9}{'x parse':>9}  note")
    for m in rows:
        xg = f"{m.cpu / grep.cpu:9.0f}" if grep and grep.cpu > 0 and m is not grep else f"{'':>9}"
        xp = f"{m.cpu / parse.cpu:9.2f}" if parse and parse.cpu > 0 and m is not parse else f"{'':>9}"
        print(f"{m.name:<34}{m.wall:9.2f}{m.cpu:9.2f}{m.peak_mib:10.0f}{xg}{xp}  {m.note}")
    print(f"({files} files, {lines} lines; ratios are of CPU seconds)")


RUNS = ("check-cold", "check-warm", "check-changed", "check-no-cache", "check-full-path", "scan", "diff")


def bench_tree(root: Path, tree: Path, jobs: int, files: int, lines: int, runs: set[str]) -> None:
    env = dict(os.environ, TS2EXPORT_CACHE_DIR=str(root / "cache"))
    rows: list[Measure] = []
    grep = measure("grep -rl jit", ["grep", "-rl", "--include=*.py", "jit", str(tree)], root)
    rows.append(grep)
    candidates = count_candidates(tree)
    parse = measure("libcst parse of candidate files", [sys.executable, "-c", PARSE_CANDIDATES, str(tree)], root,
                    note=f"{candidates} candidate files, no metadata")
    rows.append(parse)
    common = ["--no-progress", "-j", str(jobs), str(tree)]
    shutil.rmtree(root / "cache", ignore_errors=True)
    if "check-cold" in runs:
        rows.append(measure("check, cold", ts2export("check", *common), root, env))
    if "check-warm" in runs:
        if "check-cold" not in runs:
            measure("(fill the cache)", ts2export("check", *common), root, env)
        rows.append(measure("check, warm (nothing changed)", ts2export("check", *common), root, env))
    if "check-changed" in runs:
        # one file changed: the cache keys whole runs (findings depend on other files): all is checked again
        victim = next(iter(sorted(tree.rglob("*.py"))))
        victim.write_bytes(victim.read_bytes() + b"\n# touched\n")
        rows.append(measure("check, one file changed", ts2export("check", *common), root, env))
    if "check-no-cache" in runs:
        rows.append(measure("check --no-cache", ts2export("check", "--no-cache", *common), root, env))
    if "check-full-path" in runs:
        rows.append(measure("check --no-cache, full path", ts2export("check", "--no-cache", *common), root,
                            dict(env, TS2EXPORT_FULL_METADATA="1"), note="every metadata provider up front (the reference)"))
    if "scan" in runs:
        shutil.rmtree(root / "cache", ignore_errors=True)
        rows.append(measure("scan, cold", ts2export("scan", *common), root, env))
        rows.append(measure("scan, warm", ts2export("scan", *common), root, env))
    if "diff" in runs:
        shutil.rmtree(root / "cache", ignore_errors=True)
        rows.append(measure("diff, cold", ts2export("diff", *common), root, env))
        rows.append(measure("diff, warm", ts2export("diff", *common), root, env))
    table(rows, files, lines, grep, parse)


def generated(n: int) -> bytes:
    return b"import torch\n\ni = 0\n" + b"v = torch.jit.annotate(int, i)\n" * n


def bench_findings(root: Path, sizes: list[int], jobs: int) -> None:
    env = dict(os.environ, TS2EXPORT_CACHE_DIR=str(root / "cache"))
    print("\nOne file with N findings (`v = torch.jit.annotate(int, i)` lines):")
    print(f"{'N':>8}{'':<10}{'wall s':>9}{'cpu s':>9}{'peak MiB':>10}{'ms/finding':>12}")
    for n in sizes:
        folder = root / f"gen{n}"
        folder.mkdir(exist_ok=True)
        path = folder / "generated.py"
        path.write_bytes(generated(n))
        for command in ("check", "apply"):
            cache = ["--no-cache"] if command == "check" else []  # apply never uses the cache
            m = measure(f"{command} N={n}", ts2export(command, *cache, "--no-progress", "-j", str(jobs), str(path)), root, env)
            print(f"{n:>8}  {command:<8}{m.wall:9.2f}{m.cpu:9.2f}{m.peak_mib:10.0f}{1000 * m.cpu / n:12.3f}"
                  + ("" if m.rc in (0, 1) else f"  (exit {m.rc})"))
        after = path.read_bytes()
        if b"jit" in after:
            print(f"{'':>8}  ! apply left TorchScript in the file")


PROFILE = r"""
import cProfile, io, pstats, sys, time
from ts2export.cli import _configure
from ts2export.engine import analyze
from ts2export.engine.skipped import ENGINE_KINDS
import ts2export.rule.base
# Providers asked for during a visit run on a thread of their own (see rule/base.py); the profiler
# sees one thread only, so here they run inline.
ts2export.rule.base._at_the_bottom = lambda compute: compute()
tasks, options, _ = _configure([sys.argv[1]], None, None, None, None)
tasks = [t for t in tasks if t.kind in ENGINE_KINDS]
prof = cProfile.Profile()  # wall clock: a CPU-time timer is a system call per event (several times slower)
start = time.process_time()
prof.enable()
analyze(tasks, options, 1)
prof.disable()
total = time.process_time() - start
stats = pstats.Stats(prof)
phases = {
    "program model: build (ast index, sites, links)": ("program.py", "__init__"),
    "program model: per-file views for the rules": ("program.py", "views"),
    "first pass: rules over the files": ("check.py", "process_python"),
    "  of which libcst parse": ("entrypoints.py", "_parse"),
    "  of which libcst metadata (scope, names, positions, parents)": ("wrapper.py", "_gen_batchable"),
    "  of which positions (ts2export.rule.metadata)": ("metadata.py", "positions"),
    "  of which a completed parent map (ts2export.rule.metadata)": ("metadata.py", "all_parents"),
    "program model: solve": ("program.py", "solve"),
}
print(f"CPU {total:.1f} s (under the profiler, which slows Python code about 1.5-2x; the figures below are wall "
      f"seconds of the profiled process: on a shared machine compare them with each other)")
for label, (file, func) in phases.items():
    cum = sum(v[3] for k, v in stats.stats.items() if k[0].endswith(file) and k[2] == func and
              not any(c[0].endswith(file) and c[2] == func for c in v[4]))
    print(f"  {label:<66}{cum:8.1f} s")
own: dict[str, float] = {}
for (file, _line, _func), v in stats.stats.items():
    if "/rules/" in file:
        name = file.rsplit("/", 1)[1]
        own[name] = own.get(name, 0.0) + v[2]
print("  rules' own code (excluding libcst), by module:")
for name, t in sorted(own.items(), key=lambda kv: -kv[1])[:8]:
    print(f"    {name:<64}{t:8.1f} s")
out = io.StringIO()
pstats.Stats(prof, stream=out).sort_stats("tottime").print_stats(25)
print("\n".join(out.getvalue().splitlines()[4:]))
"""


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="torch/nn only")
    parser.add_argument("--jobs", type=int, default=2)
    parser.add_argument("--findings", default=None, help="comma-separated N for the generated file (\"\" or 0: none; default: "
                        "2000,8000; quick: 1000,4000; the issue's figure is 150000, see docs/speed.md)")
    parser.add_argument("--no-diff", action="store_true", help="skip `diff` over the tree")
    parser.add_argument("--runs", default=",".join(RUNS), help=f"comma-separated runs over the tree (default: all of {', '.join(RUNS)})")
    parser.add_argument("--no-tree", action="store_true", help="only the generated files")
    parser.add_argument("--no-profile", action="store_true", help="skip the profile of one run over the tree")
    parser.add_argument("--no-compile", action="store_true", help="leave the tool's bytecode as it is (see compile_bytecode)")
    args = parser.parse_args()
    print("bytecode: left as it is" if args.no_compile else f"bytecode: {compile_bytecode()}")
    chosen = ("1000,4000" if args.quick else "2000,8000") if args.findings is None else args.findings
    sizes = [int(s) for s in chosen.split(",") if s and int(s) > 0]  # "" or "0": none
    src = torch_source() / "nn" if args.quick else torch_source()
    with tempfile.TemporaryDirectory(prefix="ts2export-bench-") as tmp:
        root = Path(tmp)
        tree = root / "src"
        files, lines, size = copy_python(src, tree)
        print(f"ts2export bench: {src} copied to {tree}: {files} files, {lines} lines, {size / 2**20:.1f} MiB; "
              f"{os.cpu_count()} CPUs, load {os.getloadavg()[0]:.1f}, jobs {args.jobs}")
        tree = tree / src.name
        if not args.no_tree:
            runs = {r for r in args.runs.split(",") if r} - ({"diff"} if args.no_diff else set())
            unknown = runs - set(RUNS)
            if unknown:
                parser.error(f"unknown runs: {', '.join(sorted(unknown))} (choose from {', '.join(RUNS)})")
            bench_tree(root, tree, args.jobs, files, lines, runs)
        if sizes:
            bench_findings(root, sizes, args.jobs)
        if not args.no_profile and not args.no_tree:
            print("\nWhere the time goes (one job, no cache):")
            subprocess.run([sys.executable, "-c", PROFILE, str(tree)], cwd=root, check=False)
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    print(f"\nbench total CPU {usage.ru_utime + usage.ru_stime:.1f} s")


if __name__ == "__main__":
    main()
