"""pytest plugin used by scripts/real_packages.py inside a package's own test run.

It appends one JSON line per test phase, per failed collection and per imported copy of the package
to the file named by TS2EXPORT_REAL_LOG, as the run goes (a run killed by its timeout still leaves
what it had done). With TS2EXPORT_REAL_SEED it seeds random, numpy and torch before collection, so
a suite that draws its parameters at random collects the same tests before and after migration (and
in every xdist worker). With TS2EXPORT_REAL_SORT_CASES=1 it puts the parametrized cases of each test
function in the order of their ids (the functions keep theirs): a suite that parametrizes over a set
of objects hashed by address (torch-geometric's INDEX_DTYPES, a set of torch dtypes) collects its
cases in a different order in each process, which xdist refuses ("Different tests were collected").
Standard library and pytest only: it runs in the package's virtual environment.

    TS2EXPORT_REAL_LOG=run.jsonl TS2EXPORT_REAL_MODULE=e3nn python -m pytest -p ts2export_real_probe ...
"""

from __future__ import annotations

import json
import os
import sys

import pytest

_MAX_TEXT = 6000
_MAX_LINES = 40


def _write(record: dict) -> None:
    path = os.environ.get("TS2EXPORT_REAL_LOG")
    if not path:
        return
    with open(path, "a", encoding="utf-8") as fh:
        fh.write(json.dumps(record) + "\n")


def _is_worker(config) -> bool:
    return hasattr(config, "workerinput")  # an xdist worker: the controller logs its reports


def _chain(longrepr) -> list:
    chain = getattr(longrepr, "chain", None)
    if chain is None:
        tb = getattr(longrepr, "reprtraceback", None)
        chain = [(tb, getattr(longrepr, "reprcrash", None), None)] if tb is not None else []
    return list(chain)


def _frames(longrepr) -> list[dict]:
    """Every traceback frame pytest kept, of every chained exception ("chain": 0 is the first one
    raised, the root cause), innermost last."""
    frames = []
    for index, (tb, _crash, _descr) in enumerate(_chain(longrepr)):
        for entry in getattr(tb, "reprentries", None) or []:
            loc = getattr(entry, "reprfileloc", None)
            if loc is None:
                continue
            frames.append(
                {
                    "chain": index,
                    "path": str(loc.path),
                    "line": int(loc.lineno),
                    "exc": str(loc.message),
                    "lines": [str(s) for s in (getattr(entry, "lines", None) or [])][-_MAX_LINES:],
                }
            )
    return frames


def _messages(longrepr) -> list[str]:
    """The message of each chained exception, the root cause first."""
    out = []
    for tb, crash, _descr in _chain(longrepr):
        if crash is not None:
            out.append(str(crash.message)[:1000])
            continue
        entries = getattr(tb, "reprentries", None) or []
        lines = [str(s)[1:].strip() for s in (getattr(entries[-1], "lines", None) or []) if str(s).startswith("E ")] if entries else []
        out.append(" ".join(lines)[:1000])
    return out


def _crash(longrepr) -> dict | None:
    crash = getattr(longrepr, "reprcrash", None)
    if crash is None:
        return None
    return {"path": str(crash.path), "line": int(crash.lineno), "message": str(crash.message)[:_MAX_TEXT]}


def _text(report) -> str:
    try:
        text = report.longreprtext
    except Exception:  # noqa: BLE001 - a report we cannot render still counts
        text = str(report.longrepr)
    return text[-_MAX_TEXT:]


def pytest_runtest_logreport(report) -> None:
    config = getattr(report, "config", None) or _CONFIG.get("config")
    if config is not None and _is_worker(config):
        return
    record = {
        "kind": "test",
        "nodeid": report.nodeid,
        "when": report.when,
        "outcome": report.outcome,
        "duration": round(float(getattr(report, "duration", 0.0)), 3),
        "xfail": hasattr(report, "wasxfail"),
    }
    if report.failed:
        record["frames"] = _frames(report.longrepr)
        record["crash"] = _crash(report.longrepr)
        record["messages"] = _messages(report.longrepr)
        record["text"] = _text(report)
    elif report.skipped and isinstance(report.longrepr, tuple) and len(report.longrepr) == 3:
        record["text"] = str(report.longrepr[2])[:500]
    _write(record)


def pytest_collectreport(report) -> None:
    config = _CONFIG.get("config")
    if config is not None and _is_worker(config):
        return
    if report.failed:
        _write({"kind": "collect", "nodeid": report.nodeid, "text": _text(report), "frames": _frames(report.longrepr)})


_CONFIG: dict = {}


def _function_id(nodeid: str) -> str:
    return nodeid.split("[", 1)[0]


def _sort_cases(items: list) -> None:
    """The cases of each test function together, in the order of their ids, at the place of its first case."""
    first: dict[str, int] = {}
    for index, item in enumerate(items):
        first.setdefault(_function_id(item.nodeid), index)
    items[:] = sorted(items, key=lambda item: (first[_function_id(item.nodeid)], item.nodeid))


@pytest.hookimpl(trylast=True)  # after the suite's own conftest hooks (kornia's drops tests there)
def pytest_collection_modifyitems(session, config, items) -> None:
    if os.environ.get("TS2EXPORT_REAL_SORT_CASES") == "1":
        _sort_cases(items)


def pytest_configure(config) -> None:
    _CONFIG["config"] = config
    seed = os.environ.get("TS2EXPORT_REAL_SEED")
    if seed is not None:  # before collection: suites that draw parameters at random collect the same tests every run
        _seed(int(seed))


def _seed(seed: int) -> None:
    import random

    random.seed(seed)
    for name in ("numpy", "torch"):
        try:
            module = __import__(name)
        except ImportError:
            continue
        if name == "numpy":
            module.random.seed(seed)
        else:
            module.manual_seed(seed)


def _module_record(config, when: str) -> None:
    name = os.environ.get("TS2EXPORT_REAL_MODULE")
    module = sys.modules.get(name) if name else None
    _write({"kind": "module", "name": name, "when": when, "worker": _is_worker(config),
            "file": getattr(module, "__file__", None) if module is not None else None})


def pytest_collection_finish(session) -> None:
    _module_record(session.config, "collected")  # early, so a run killed by its timeout still tells


def pytest_sessionfinish(session, exitstatus) -> None:
    _module_record(session.config, "finished")
