#!/usr/bin/env python3
"""Real code, judged by its own test suite (issue 11).

For each TorchScript-using package in PACKAGES (pinned versions whose source distributions ship their
tests), this script:

1. creates or reuses a virtual environment under the work folder (default ~/.cache/ts2export-real,
   keyed by package, version, torch pin and Python), with torch pinned by a constraints file, the
   package and its test requirements, and ts2export installed editable from this checkout;
2. downloads the package's sdist (`pip download --no-binary :all: --no-deps PKG==VER`) and unpacks it,
   or, for a package with a git `source` (its sdist ships no tests: kornia, torch-geometric), unpacks
   `git archive COMMIT` of a bare copy of its repository (found under --git-mirror, default /work/.mirror,
   or cloned into WORK/git) and makes the environment from that tree; the commit is in the results;
3. runs the package's own test subset against a copy of that SOURCE tree (the tree comes first on
   sys.path, and a pytest plugin checks that the tests imported that copy, not site-packages);
4. copies the tree again, runs `ts2export apply` (safe fixes) and `ts2export apply --unsafe-fixes`
   on the package and its tests (one fresh copy per mode), and runs the same subset on each;
   mode record (`--modes record`, not by default) first runs the same subset on its fresh copy under
   `ts2export record -o RUNDIR/rec.json --` (cwd = that copy, so the recording's paths are apply's),
   then `ts2export apply --unsafe-fixes --recording RUNDIR/rec.json`, then the subset again;
5. prints per package and mode: tests passed before / after, each test that fails only after with
   the ts2export finding(s) that rewrote the code its traceback runs through, files changed,
   findings fixed and left by rule, findings held back behind an entry point whose target ts2export
   cannot follow (from `scan --format json`, with the recording in mode record), the entry points the
   recording reached, and the wall time of each step (tests before, record run, apply, tests after);
6. writes everything to a JSON file, and with --write-docs regenerates the table in
   docs/reliability.md (or renders a saved JSON with --render JSON).

It installs packages and takes minutes, so it is not part of the test suite; its pure parts
(parsing the test log, classifying, rendering) are tested in tests/test_real_packages.py.

    python scripts/real_packages.py                          # every package, both modes
    python scripts/real_packages.py --packages julius --modes unsafe --skip-install
    python scripts/real_packages.py --packages cuequivariance-torch --modes unsafe,record --keep
    python scripts/real_packages.py --write-docs --date 2026-11-30
    python scripts/real_packages.py --render ~/.cache/ts2export-real/results.json --write-docs

Exit status: 0 when no test that passed before fails after in any mode (TorchScript-asserting tests
aside), 1 when some do, 2 when a package or mode could not be measured (install, sdist, test run).

Standard library only: run it with any Python 3.10+ (the package environments are made with the same
interpreter unless --python says otherwise).
"""

from __future__ import annotations

import argparse
import dataclasses
import datetime as _dt
import hashlib
import json
import os
import re
import shlex
import shutil
import signal
import subprocess
import sys
import tarfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from real_packages_report import (  # noqa: E402  (the pure parts, beside this script)
    applied_findings, changed_hunks, compare, entry_point_counts, held_unfollowable, mode_label, module_files,
    parse_apply_left, read_log, relative_to_tree, render_markdown, render_text, rule_counts, run_summary, test_outcomes,
    update_doc,
)
from real_packages_list import GIT_SOURCE, GITHUB_REPO, PACKAGES, GitSource, Package, parse_git_source  # noqa: E402, F401

REPO = Path(__file__).resolve().parent.parent
PROBE = Path(__file__).resolve().parent / "real_packages_probe.py"
PROBE_MODULE = "ts2export_real_probe"
DOC = REPO / "docs" / "reliability.md"
MODES = ("safe", "unsafe", "record")
DEFAULT_MODES = ("safe", "unsafe")
RUNNER_REQUIREMENTS = ("pytest>=8", "pytest-xdist>=3", "pytest-timeout>=2", "setuptools>=68")


class Failure(Exception):
    """A step failed for a reason worth one line in the report."""


def log(msg: str) -> None:
    print(f"[{time.strftime('%H:%M:%S')}] {msg}", file=sys.stderr, flush=True)


def torch_pin() -> str:
    for line in (REPO / "constraints.txt").read_text(encoding="utf-8").splitlines():
        if line.strip().startswith("torch=="):
            return line.strip()
    raise Failure("constraints.txt pins no torch version")


def run(cmd: list[str], *, cwd: Path | None = None, env: dict | None = None, timeout: float | None = None,
        check: bool = True, capture: bool = True) -> subprocess.CompletedProcess:
    """Run a command in its own process group (a timeout kills the whole group)."""
    proc = subprocess.Popen(cmd, cwd=cwd, env=env, text=True, start_new_session=True,
                            stdout=subprocess.PIPE if capture else None, stderr=subprocess.PIPE if capture else None)
    try:
        out, err = proc.communicate(timeout=timeout)
    except subprocess.TimeoutExpired:
        os.killpg(proc.pid, signal.SIGKILL)
        out, err = proc.communicate()
        result = subprocess.CompletedProcess(cmd, -9, out, err)
        result.timed_out = True  # type: ignore[attr-defined]
        return result
    except BaseException:  # Ctrl-C: the group runs in its own session, so end it here
        os.killpg(proc.pid, signal.SIGKILL)
        proc.wait()
        raise
    result = subprocess.CompletedProcess(cmd, proc.returncode, out, err)
    result.timed_out = False  # type: ignore[attr-defined]
    if check and proc.returncode != 0:
        tail = "\n".join(((err or "") + (out or "")).strip().splitlines()[-15:])
        raise Failure(f"`{' '.join(cmd[:6])} ...` exited {proc.returncode}:\n{tail}")
    return result


def venv_key(pkg: Package, python: str) -> dict:
    key = {"package": pkg.name, "version": pkg.version, "requires": list(pkg.requires), "torch": torch_pin(),
           "runner": list(RUNNER_REQUIREMENTS), "python": python}
    if pkg.source:  # a git package's environment holds the dependencies its commit declares
        key["source"] = pkg.source
    return key


def ensure_venv(pkg: Package, work: Path, python: str, skip_install: bool, checkout: Path | None = None) -> Path:
    """The package's environment; a git package (`checkout`: its tree at the commit) is installed from that
    tree (a copy of it, so that no build output lands in the tree under test), for the dependencies it declares."""
    key = venv_key(pkg, python)
    digest = hashlib.sha256(json.dumps(key, sort_keys=True).encode()).hexdigest()[:10]
    venv = work / "venvs" / f"{pkg.name}-{pkg.version}-{digest}"
    marker = venv / "ts2export-real.json"
    vpy = venv / "bin" / "python"
    if marker.exists() and vpy.exists():
        log(f"{pkg.name}: reusing {venv}")
    else:
        if skip_install:
            raise Failure(f"--skip-install, but there is no environment for {pkg.name} {pkg.version} under {work}")
        log(f"{pkg.name}: creating {venv}")
        if venv.exists():
            shutil.rmtree(venv)
        venv.parent.mkdir(parents=True, exist_ok=True)
        run([python, "-m", "venv", str(venv)])
        constraints = work / "constraints.txt"
        constraints.write_text(torch_pin() + "\n", encoding="utf-8")
        pip = [str(vpy), "-m", "pip", "install", "-q", "--disable-pip-version-check", "-c", str(constraints)]
        run(pip + [torch_pin()], timeout=1800)
        if checkout is None:
            run(pip + [f"{pkg.name}=={pkg.version}", *pkg.requires, *RUNNER_REQUIREMENTS], timeout=1800)
        else:
            build = work / "build" / checkout.name
            copy_tree(checkout, build)
            try:
                run(pip + [str(build), *pkg.requires, *RUNNER_REQUIREMENTS], timeout=1800)
            finally:
                shutil.rmtree(build, ignore_errors=True)
        # ts2export's own dependencies (editable install below, without build isolation)
        run(pip + ["-e", str(REPO), "--no-build-isolation"], timeout=1800)
        installed = run([str(vpy), "-c", "import torch; print(torch.__version__)"]).stdout.strip()
        if not installed.startswith(torch_pin().split("==", 1)[1]):
            raise Failure(f"{pkg.name}: the environment got torch {installed}, not {torch_pin()}")
        marker.write_text(json.dumps(key, indent=1), encoding="utf-8")
    ensure_ts2export(vpy, work)
    return venv


def ensure_ts2export(vpy: Path, work: Path) -> None:
    """The environment's ts2export must be this checkout (editable): re-point it when it is not."""
    where = run([str(vpy), "-c", "import ts2export, os; print(os.path.realpath(ts2export.__file__))"], check=False)
    if where.returncode == 0 and where.stdout.strip().startswith(str(REPO.resolve() / "migrate")):
        return
    log(f"installing ts2export from {REPO} into {vpy.parent.parent.name}")
    run([str(vpy), "-m", "pip", "install", "-q", "--disable-pip-version-check", "--no-deps", "--no-build-isolation",
         "-e", str(REPO)], timeout=600)


def sdist_pattern(name: str, version: str) -> re.Pattern:
    """The file name of the sdist of NAME==VERSION: `-`, `_` and `.` in a name are the same to PyPI
    (mace-torch's sdist is mace_torch-0.3.16.tar.gz)."""
    parts = "[-_.]".join(re.escape(part) for part in re.split(r"[-_.]+", name))
    return re.compile(rf"^{parts}-{re.escape(version)}\.(tar\.gz|zip)$", re.I)


def ensure_sdist(pkg: Package, work: Path, vpy: Path, skip_install: bool) -> Path:
    """The unpacked sdist (cached); checks that it has the tests the configuration names."""
    sdists = work / "sdists"
    sdists.mkdir(parents=True, exist_ok=True)
    stem = sdist_pattern(pkg.name, pkg.version)
    found = [p for p in sdists.iterdir() if stem.match(p.name)]
    if not found:
        if skip_install:
            raise Failure(f"--skip-install, but the sdist of {pkg.name} {pkg.version} is not under {sdists}")
        log(f"{pkg.name}: downloading the sdist")
        # --no-binary NAME, not :all: (which would also build the build backend's own dependencies from source,
        # numpy and Cython for a Cython package: an hour on 2 cores)
        run([str(vpy), "-m", "pip", "download", "-q", "--disable-pip-version-check", "--no-binary", pkg.name,
             "--no-deps", "-d", str(sdists), f"{pkg.name}=={pkg.version}"], timeout=900)
        found = [p for p in sdists.iterdir() if stem.match(p.name)]
        if not found:
            raise Failure(f"pip download left no sdist of {pkg.name} {pkg.version} in {sdists}")
    archive = found[0]
    tree = work / "src" / archive.name.rsplit(".tar.gz", 1)[0].rsplit(".zip", 1)[0]
    if not (tree / ".unpacked").exists():
        if tree.exists():
            shutil.rmtree(tree)
        tree.parent.mkdir(parents=True, exist_ok=True)
        staging = tree.with_name(tree.name + ".partial")
        if staging.exists():
            shutil.rmtree(staging)
        if archive.name.endswith(".zip"):
            shutil.unpack_archive(str(archive), str(staging))
        else:
            with tarfile.open(archive) as tf:
                tf.extractall(staging, filter="data") if hasattr(tarfile, "data_filter") else tf.extractall(staging)
        tops = [p for p in staging.iterdir()]
        top = tops[0] if len(tops) == 1 and tops[0].is_dir() else staging
        top.rename(tree)
        shutil.rmtree(staging, ignore_errors=True)
        (tree / ".unpacked").write_text(archive.name, encoding="utf-8")
    missing = [p for p in (*pkg.tests, *pkg.migrate) if not (tree / p).exists()]
    if missing:
        raise Failure(f"the sdist of {pkg.name} {pkg.version} has no {', '.join(missing)}: its tests are not shipped")
    if pkg.binaries:
        copy_binaries(pkg, vpy, tree)
    return tree


def git(git_dir: Path, *args: str, **kw) -> subprocess.CompletedProcess:
    return run(["git", f"--git-dir={git_dir}", *args], **kw)


def git_dir_of(path: Path) -> Path | None:
    """The git directory of `path` (a bare repository, or a work tree's .git), or None."""
    if not path.is_dir():
        return None
    res = run(["git", "-C", str(path), "rev-parse", "--absolute-git-dir"], check=False, timeout=60)
    return Path(res.stdout.strip()) if res.returncode == 0 and res.stdout.strip() else None


def ensure_git_dir(src: GitSource, work: Path, mirrors: list[Path], skip_install: bool) -> Path:
    """A git directory holding src.commit: a mirror's copy, WORK/git's, or (GitHub, not --skip-install) a bare
    clone made there. A copy that lacks the commit is passed over (an older snapshot)."""
    seen = []
    for cand in src.candidates(work, mirrors):
        gd = git_dir_of(cand)
        if gd is None:
            continue
        seen.append(str(cand))
        if git(gd, "cat-file", "-e", f"{src.commit}^{{commit}}", check=False, timeout=60).returncode == 0:
            return gd
    if src.url and not skip_install:
        dest = work / "git" / (src.repo.replace("/", "+") + ".git")
        log(f"cloning {src.url} into {dest}")
        if dest.exists():
            git(dest, "fetch", "--quiet", src.url, src.commit, timeout=1800)
        else:
            dest.parent.mkdir(parents=True, exist_ok=True)
            run(["git", "clone", "--bare", "--quiet", src.url, str(dest)], timeout=1800)
        if git(dest, "cat-file", "-e", f"{src.commit}^{{commit}}", check=False, timeout=60).returncode == 0:
            return dest
        seen.append(str(dest))
    where = ", ".join(seen) if seen else "none of " + ", ".join(str(c) for c in src.candidates(work, mirrors))
    raise Failure(f"no copy of {src.label} holds commit {src.commit} (looked in {where})")


def ensure_checkout(pkg: Package, work: Path, mirrors: list[Path], skip_install: bool) -> tuple[Path, str]:
    """The package's tree at its commit (`git archive COMMIT`, unpacked under WORK/src, cached), and the commit.
    Checks that it has the tests and paths the configuration names."""
    src = pkg.git
    assert src is not None
    tree = work / "src" / f"{pkg.name}-{pkg.version}-git-{src.commit[:12]}"
    marker = tree / ".unpacked"
    if not (marker.exists() and marker.read_text(encoding="utf-8").split() == [src.label, src.commit]):
        gd = ensure_git_dir(src, work, mirrors, skip_install)
        log(f"{pkg.name}: checking out {src.label} at {src.commit[:12]} from {gd}")
        if tree.exists():
            shutil.rmtree(tree)
        staging = tree.with_name(tree.name + ".partial")
        if staging.exists():
            shutil.rmtree(staging)
        staging.mkdir(parents=True)
        extract_git_archive(gd, src.commit, staging)
        staging.rename(tree)
        marker.write_text(f"{src.label} {src.commit}\n", encoding="utf-8")
    missing = [p for p in (*pkg.tests, *pkg.migrate) if not (tree / p).exists()]
    if missing:
        raise Failure(f"{src.label} at {src.commit[:12]} has no {', '.join(missing)}")
    return tree, src.commit


def extract_git_archive(git_dir: Path, commit: str, dest: Path) -> None:
    """`git archive COMMIT | tar -x -C DEST`, with the standard library's tar (data filter where it has one)."""
    proc = subprocess.Popen(["git", f"--git-dir={git_dir}", "archive", "--format=tar", commit], stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE)
    assert proc.stdout is not None
    try:
        with tarfile.open(fileobj=proc.stdout, mode="r|") as tf:
            tf.extractall(dest, filter="data") if hasattr(tarfile, "data_filter") else tf.extractall(dest)
    finally:
        proc.stdout.close()
        err = proc.stderr.read().decode(errors="replace") if proc.stderr else ""
        rc = proc.wait()
    if rc != 0:
        raise Failure(f"git archive {commit} in {git_dir} exited {rc}: {err.strip()[-300:]}")


BINARY_SUFFIXES = (".so", ".pyd")


def copy_binaries(pkg: Package, vpy: Path, tree: Path) -> None:
    """Copy the compiled modules of the installed package (site-packages) into the unpacked sdist, beside
    the sources they are built from, so that the tests can import the tree (an sdist of a Cython package
    ships .pyx files only). ts2export reads none of them."""
    where = run([str(vpy), "-c", f"import {pkg.import_name}, os; print(os.path.dirname(os.path.realpath({pkg.import_name}.__file__)))"],
                cwd=vpy.parent, env={k: v for k, v in os.environ.items() if not k.startswith("PYTHON")}).stdout.strip()
    installed = Path(where)
    dest_root = tree / pkg.source_root / pkg.import_name.replace(".", "/")
    copied = 0
    for so in installed.rglob("*"):
        if so.is_file() and so.suffix in BINARY_SUFFIXES:
            dest = dest_root / so.relative_to(installed)
            if not dest.exists() or dest.stat().st_size != so.stat().st_size:
                dest.parent.mkdir(parents=True, exist_ok=True)
                shutil.copy2(so, dest)
            copied += 1
    if not copied:
        raise Failure(f"{pkg.name}: binaries=True, but the installed package under {installed} has no compiled module")


def copy_tree(src: Path, dest: Path) -> Path:
    if dest.exists():
        shutil.rmtree(dest)
    dest.parent.mkdir(parents=True, exist_ok=True)
    shutil.copytree(src, dest, symlinks=True, ignore=shutil.ignore_patterns(".unpacked", "__pycache__", "*.egg-info"))
    return dest


def run_tests(pkg: Package, venv: Path, tree: Path, out: Path, jobs: int, timeout: int | None,
              wrap: list[str] | None = None, slack: float = 1.0) -> dict:
    """Run the package's test subset on `tree`; returns the parsed outcomes and a summary.

    With `wrap`, the pytest command line runs under it (`ts2export record -o REC --`), with `slack` times
    the time limit (the recording proves what the run compiled when its processes end)."""
    probe_dir = out.parent / "probe"
    probe_dir.mkdir(parents=True, exist_ok=True)
    shutil.copyfile(PROBE, probe_dir / f"{PROBE_MODULE}.py")
    logfile = out.with_suffix(".jsonl")
    logfile.unlink(missing_ok=True)
    env = {k: v for k, v in os.environ.items() if not k.startswith(("PYTHON", "VIRTUAL_ENV", "PYTEST"))}
    env.update(dict(pkg.env))
    env.update({
        "PYTHONPATH": os.pathsep.join([str(tree / pkg.source_root), str(probe_dir)]),
        "PYTHONDONTWRITEBYTECODE": "1",
        "TS2EXPORT_REAL_LOG": str(logfile),
        "TS2EXPORT_REAL_MODULE": pkg.import_name,
        "HF_HUB_OFFLINE": "1",
        "TS2EXPORT_REAL_SEED": "0",
        "PYTHONHASHSEED": "0",
        "PATH": f"{venv / 'bin'}{os.pathsep}{os.environ.get('PATH', '')}",
        "VIRTUAL_ENV": str(venv),
    })
    if jobs > 1:
        env.setdefault("OMP_NUM_THREADS", "1")
    cmd = [str(venv / "bin" / "python"), "-m", "pytest", "-p", PROBE_MODULE, "-p", "no:cacheprovider", "-q",
           "-rN", "--no-header", "--continue-on-collection-errors", f"--timeout={pkg.test_timeout}", *pkg.pytest_args]
    if pkg.k:
        cmd += ["-k", pkg.k]
    if jobs > 1:
        cmd += ["-n", str(jobs)]
    cmd += list(pkg.tests)
    cmd = [*(wrap or []), *cmd]
    limit = int((timeout or pkg.timeout) * slack)
    started = time.monotonic()
    res = run(cmd, cwd=tree, env=env, timeout=limit, check=False)
    seconds = time.monotonic() - started
    (out.with_suffix(".log")).write_text((res.stdout or "") + (res.stderr or ""), encoding="utf-8")
    records = read_log(logfile)
    outcomes = test_outcomes(records)
    summary = run_summary(records, outcomes)
    summary.update({"seconds": round(seconds, 1), "timed_out": bool(res.timed_out), "exit": res.returncode})
    if not outcomes and not res.timed_out:
        tail = "\n".join(((res.stdout or "") + (res.stderr or "")).strip().splitlines()[-8:])
        raise Failure(f"pytest ran no test of {pkg.name} (exit {res.returncode}):\n{tail}")
    files = module_files(records)
    outside = [f for f in files if relative_to_tree(f, tree) is None]
    if not files:
        why = f"the run timed out after {limit} s" if res.timed_out else "check the configuration"
        raise Failure(f"the tests of {pkg.name} never imported `{pkg.import_name}` ({why})")
    if outside:
        raise Failure(f"the tests imported {pkg.import_name} from {outside[0]}, not from the tree under test {tree}")
    summary["module_file"] = relative_to_tree(files[0], tree)
    return {"outcomes": outcomes, "records": records, "summary": summary}


def ts2export(venv: Path, tree: Path, args: list[str], timeout: float = 1800) -> subprocess.CompletedProcess:
    env = {**os.environ, "NO_COLOR": "1", "TERM": "dumb", "COLUMNS": "200"}
    return run([str(venv / "bin" / "ts2export"), *args], cwd=tree, env=env, timeout=timeout, check=False)


def scan_json(venv: Path, tree: Path, paths: list[str], extra: list[str]) -> list[dict]:
    return scan_doc(venv, tree, paths, extra)["findings"]


def scan_doc(venv: Path, tree: Path, paths: list[str], extra: list[str]) -> dict:
    """`ts2export scan --format json`: findings, artifacts, and with --recording the entry points."""
    res = ts2export(venv, tree, ["scan", "--format", "json", "--no-progress", *extra, *paths])
    if res.returncode not in (0, 1) and not (res.stdout or "").lstrip().startswith("{"):
        raise Failure(f"ts2export scan exited {res.returncode}: {(res.stderr or '').strip()[-300:]}")
    try:
        data = json.loads(res.stdout)
    except json.JSONDecodeError as exc:
        raise Failure(f"ts2export scan printed no JSON ({exc})") from exc
    return data


def python_files(root: Path) -> dict[str, str]:
    out = {}
    for p in sorted(root.rglob("*")):
        if p.is_file() and p.suffix in (".py", ".pyi", ".cpp", ".h", ".cc", ".hpp", ".cu", ".cuh") and not p.is_symlink():
            out[p.relative_to(root).as_posix()] = p.read_text(encoding="utf-8", errors="surrogateescape")
    return out


def migrate(pkg: Package, venv: Path, before: dict[str, str], tree: Path, mode: str, extra: list[str],
            findings: list[dict]) -> dict:
    """Apply ts2export to `tree`, whose source files were `before` (python_files); `findings` is the
    scan made before. Mode record passes `--recording REC` in `extra`."""
    args = ["apply", "--no-progress", *(["--unsafe-fixes"] if mode in ("unsafe", "record") else []), *extra, *pkg.migrate]
    started = time.monotonic()
    res = ts2export(venv, tree, args)
    seconds = time.monotonic() - started
    if res.returncode not in (0, 1, 2):
        raise Failure(f"`ts2export {' '.join(args)}` exited {res.returncode}: {(res.stderr or '').strip()[-300:]}")
    output = (res.stdout or "") + (res.stderr or "")
    errors = [ln for ln in output.splitlines() if ": error:" in ln or ln.startswith("error")]
    after = python_files(tree)
    hunks = {p: changed_hunks(before[p], after[p]) for p in after if p in before and before[p] != after[p]}
    added = sorted(set(after) - set(before))
    left = parse_apply_left(res.stdout or "")
    if left is None:  # the summary line did not match what was listed: ask scan
        left = scan_json(venv, tree, list(pkg.migrate), extra)
    applied = applied_findings(findings, mode, hunks)
    return {
        "args": args,
        "exit": res.returncode,
        "seconds": round(seconds, 1),
        "errors": errors[:20],
        "files_changed": sorted(hunks) + added,
        "findings_before": rule_counts(findings),
        "findings_fixed": rule_counts(applied),
        "fixed_reported": int(fm.group(1)) if (fm := re.search(r"^Fixed (\d+) finding", res.stdout or "", re.M)) else None,
        "findings_left": rule_counts(left),
        "hunks": hunks,
        "applied": applied,
        "output_tail": "\n".join((res.stdout or "").splitlines()[-3:]),
    }


def run_package(pkg: Package, args: argparse.Namespace, work: Path) -> dict:
    entry: dict = {"name": pkg.name, "version": pkg.version, "tests": list(pkg.tests), "k": pkg.k,
                   "subset": pkg.subset, "modes": {}}
    started = time.monotonic()
    try:
        checkout = None
        if pkg.source:
            src = pkg.git
            checkout, commit = ensure_checkout(pkg, work, args.git_mirror, args.skip_install)
            entry.update({"version": f"{pkg.version} (git {commit[:10]})", "source": src.label, "commit": commit})
        venv = ensure_venv(pkg, work, args.python, args.skip_install, checkout)
        vpy = venv / "bin" / "python"
        entry["torch"] = run([str(vpy), "-c", "import torch; print(torch.__version__)"]).stdout.strip()
        pristine = checkout if checkout is not None else ensure_sdist(pkg, work, vpy, args.skip_install)
        rundir = work / "runs" / f"{pkg.name}-{pkg.version}"
        if rundir.exists():
            shutil.rmtree(rundir)
        test_files = {p for p in python_files(pristine) if any(p == t or p.startswith(t.rstrip("/") + "/") for t in pkg.tests)}
        tree = copy_tree(pristine, rundir / "before" / pristine.name)
        log(f"{pkg.name}: running the tests before migration")
        before = run_tests(pkg, venv, tree, rundir / "before", args.jobs, args.timeout)
        entry["before"] = before["summary"]
        log(f"{pkg.name}: before: {before['summary']['passed']} passed of {before['summary']['tests']} "
            f"in {before['summary']['seconds']:.0f} s")
        findings = scan_json(venv, tree, list(pkg.migrate), args.ts2export_args)
        pristine_files = python_files(pristine)
        for mode in args.modes:
            m: dict = {}
            entry["modes"][mode] = m
            try:
                tree = copy_tree(pristine, rundir / mode / pristine.name)
                extra, mode_findings, before_files = list(args.ts2export_args), findings, pristine_files
                if mode == "record":
                    rec = record_run(pkg, venv, tree, rundir, args, m)
                    extra += ["--recording", str(rec)]
                    doc = scan_doc(venv, tree, list(pkg.migrate), extra)
                    mode_findings = doc["findings"]
                    m["entry_points"] = doc.get("entry_points", [])
                    m.update(entry_point_counts(m["entry_points"]))
                    before_files = python_files(tree)  # what the tests left in the tree is not apply's
                m["held_unfollowable"] = held_unfollowable(mode_findings)
                log(f"{pkg.name}: ts2export {mode_label(mode)}")
                mig = migrate(pkg, venv, before_files, tree, mode, extra, mode_findings)
                log(f"{pkg.name}: {len(mig['files_changed'])} files changed in {mig['seconds']:.0f} s; running the tests after")
                after = run_tests(pkg, venv, tree, rundir / mode, args.jobs, args.timeout)
                cmp = compare(before["outcomes"], after["outcomes"], after["records"], tree, mig["hunks"],
                              mig["applied"], test_files, after["summary"]["timed_out"])
                m.update({k: v for k, v in mig.items() if k not in ("hunks", "applied")})
                m["after"] = after["summary"]
                m.update(cmp)
                log(f"{pkg.name}: {mode_label(mode)}: {after['summary']['passed']} passed after, "
                    f"{len(cmp['regressions'])} fail only after")
            except Failure as exc:
                m["error"] = str(exc).splitlines()[0]
                m["error_detail"] = str(exc)
                log(f"{pkg.name}: {mode_label(mode)}: {exc}")
        if not args.keep:
            shutil.rmtree(rundir, ignore_errors=True)
    except Failure as exc:
        entry["error"] = str(exc).splitlines()[0]
        entry["error_detail"] = str(exc)
        log(f"{pkg.name}: {exc}")
    entry["seconds"] = round(time.monotonic() - started, 1)
    return entry


def record_run(pkg: Package, venv: Path, tree: Path, rundir: Path, args: argparse.Namespace, m: dict) -> Path:
    """Mode record: the package's test subset, on the tree that apply will migrate next (cwd = the tree,
    so the recording's paths are the ones apply reads), under `ts2export record -o RUNDIR/rec.json --`.
    Keeps the run's summary (and wall time) in m["record_run"]; returns the recording."""
    rec = rundir / "rec.json"
    rec.unlink(missing_ok=True)
    wrap = [str(venv / "bin" / "ts2export"), "record", "-o", str(rec), "--"]
    log(f"{pkg.name}: running the tests under ts2export record")
    res = run_tests(pkg, venv, tree, rundir / "record-run", args.jobs, args.timeout, wrap=wrap, slack=3)
    m["record_run"] = res["summary"]
    log(f"{pkg.name}: record run: {res['summary']['passed']} passed of {res['summary']['tests']} "
        f"in {res['summary']['seconds']:.0f} s")
    if not rec.exists():
        tail = "\n".join((rundir / "record-run.log").read_text(encoding="utf-8", errors="replace").strip().splitlines()[-8:])
        raise Failure(f"ts2export record wrote no recording {rec} (exit {res['summary']['exit']}):\n{tail}")
    return rec


def git_describe() -> str:
    try:
        sha = subprocess.run(["git", "rev-parse", "--short", "HEAD"], cwd=REPO, text=True, capture_output=True, check=True).stdout.strip()
        dirty = subprocess.run(["git", "status", "--porcelain", "--", "migrate", "rules"], cwd=REPO, text=True,
                               capture_output=True, check=True).stdout.strip()
        return sha + ("+changes" if dirty else "")
    except (OSError, subprocess.CalledProcessError):
        return "unknown"


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n", 1)[0], formatter_class=argparse.RawDescriptionHelpFormatter,
                                epilog="Packages: " + ", ".join(f"{p.name} {p.version}" for p in PACKAGES.values()))
    p.add_argument("--packages", default=",".join(PACKAGES), help="comma-separated subset (default: all)")
    p.add_argument("--modes", default=",".join(DEFAULT_MODES),
                   help="comma-separated: safe (apply), unsafe (apply --unsafe-fixes), record (the tests under "
                   "`ts2export record`, then apply --unsafe-fixes --recording); default safe,unsafe")
    p.add_argument("--work", type=Path, default=Path(os.environ.get("TS2EXPORT_REAL_WORK", Path.home() / ".cache" / "ts2export-real")),
                   help="cache and work folder, outside the repository (default ~/.cache/ts2export-real)")
    p.add_argument("--skip-install", action="store_true", help="never install or download: reuse what --work holds")
    p.add_argument("--git-mirror", action="append", type=Path, default=None, metavar="DIR",
                   help="a folder of bare git copies for the packages taken from git (OWNER+REPO/repo, OWNER+REPO.git "
                   "or OWNER/REPO.git), repeatable; default $TS2EXPORT_REAL_GIT_MIRROR or /work/.mirror; then WORK/git, "
                   "where a missing one is cloned")
    p.add_argument("--keep", action="store_true", help="keep the migrated trees and logs under WORK/runs")
    p.add_argument("--jobs", "-j", type=int, default=2, help="pytest-xdist workers per test run (1: no xdist; default 2)")
    p.add_argument("--timeout", type=int, default=None, help="seconds for one pytest run (default: per package)")
    p.add_argument("--ts2export-args", default="", help="extra arguments for ts2export scan and apply, e.g. '--select TSX3'")
    p.add_argument("--python", default=sys.executable, help="interpreter for the package environments")
    p.add_argument("--json", type=Path, default=None, help="results file (default WORK/results.json)")
    p.add_argument("--write-docs", action="store_true", help=f"regenerate the table in {DOC.relative_to(REPO)}")
    p.add_argument("--doc", type=Path, default=DOC, help=argparse.SUPPRESS)
    p.add_argument("--date", default=_dt.date.today().isoformat(), help="date written in the table (default today)")
    p.add_argument("--note", default="", help="a sentence added after the table's heading line")
    p.add_argument("--render", type=Path, default=None, help="render a saved results JSON (with --write-docs) and run nothing")
    args = p.parse_args(argv)
    args.packages = [s.strip() for s in args.packages.split(",") if s.strip()]
    unknown = [s for s in args.packages if s not in PACKAGES]
    if unknown:
        p.error(f"unknown package {unknown[0]!r}; known: {', '.join(PACKAGES)}")
    args.modes = [s.strip() for s in args.modes.split(",") if s.strip()]
    if not args.modes or any(m not in MODES for m in args.modes):
        p.error("--modes takes safe, unsafe and record, comma-separated")
    args.ts2export_args = shlex.split(args.ts2export_args)
    if args.jobs < 1:
        p.error("--jobs must be 1 or more")
    args.work = args.work.expanduser().resolve()
    if args.git_mirror is None:
        args.git_mirror = [Path(d) for d in os.environ.get("TS2EXPORT_REAL_GIT_MIRROR", "/work/.mirror").split(os.pathsep) if d]
    args.git_mirror = [d.expanduser() for d in args.git_mirror]
    if args.work == REPO or REPO in args.work.parents:
        p.error("--work must lie outside the repository (the scan would see the packages)")
    return args


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    if args.render:
        try:
            results = json.loads(args.render.read_text(encoding="utf-8"))
        except (OSError, json.JSONDecodeError) as exc:
            print(f"error: cannot read {args.render}: {exc}", file=sys.stderr)
            return 2
        if args.note:  # a note given now replaces the saved one
            results["note"] = args.note
    else:
        args.work.mkdir(parents=True, exist_ok=True)
        started = time.monotonic()
        results = {
            "date": args.date,
            "torch": torch_pin().split("==", 1)[1],
            "python": subprocess.run([args.python, "-c", "import platform; print(platform.python_version())"],
                                     text=True, capture_output=True).stdout.strip(),
            "ts2export": git_describe(),
            "ts2export_args": args.ts2export_args,
            "note": args.note,
            "packages": [run_package(PACKAGES[name], args, args.work) for name in args.packages],
        }
        results["seconds"] = round(time.monotonic() - started, 1)
        out = args.json or args.work / "results.json"
        out.parent.mkdir(parents=True, exist_ok=True)
        tmp = out.with_suffix(".tmp")
        tmp.write_text(json.dumps(results, indent=1), encoding="utf-8")
        tmp.replace(out)
        log(f"results in {out} ({results['seconds']:.0f} s)")
    print(render_text(results))
    if args.write_docs:
        doc = args.doc
        text = doc.read_text(encoding="utf-8") if doc.exists() else ""
        doc.write_text(update_doc(text, render_markdown(results)), encoding="utf-8")
        log(f"wrote {doc}")
    return exit_code(results)


def exit_code(results: dict) -> int:
    """2: a package (or a mode) could not be measured; 1: some test passed before and fails after
    (TorchScript-asserting tests aside); 0: the never-broken rule held everywhere."""
    packages = results["packages"]
    if any(p.get("error") or any(m.get("error") for m in p.get("modes", {}).values()) for p in packages):
        return 2
    broken = any(r["class"] != "torchscript-assertion" for p in packages for m in p["modes"].values() for r in m["regressions"])
    return 1 if broken else 0


if __name__ == "__main__":
    sys.exit(main())
