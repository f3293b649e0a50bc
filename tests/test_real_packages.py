"""The pure parts of scripts/real_packages.py (scripts/real_packages_report.py: test log, outcomes, attribution, classification,
rendering) and its pytest probe, without network or package installs."""

from __future__ import annotations

import dataclasses
import importlib.util
import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path
from types import SimpleNamespace

import pytest

ROOT = Path(__file__).resolve().parent.parent


def _load(name: str):
    spec = importlib.util.spec_from_file_location(name, ROOT / "scripts" / f"{name}.py")
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    spec.loader.exec_module(module)
    return module


rp = _load("real_packages")  # the runner (it imports its pure parts from beside it)
pure = sys.modules["real_packages_report"]  # its pure parts


def rec(nodeid, when, outcome, **kw):
    return {"kind": "test", "nodeid": nodeid, "when": when, "outcome": outcome, **kw}


def test_read_log_drops_a_torn_last_line(tmp_path):
    log = tmp_path / "run.jsonl"
    log.write_text(json.dumps(rec("t.py::a", "call", "passed")) + "\n" + '{"kind": "test", "nodeid": "t.py::b", "wh')
    assert [r["nodeid"] for r in pure.read_log(log)] == ["t.py::a"]
    assert pure.read_log(tmp_path / "absent.jsonl") == []


def test_outcomes_combine_the_phases():
    records = [
        rec("t.py::ok", "setup", "passed"), rec("t.py::ok", "call", "passed"), rec("t.py::ok", "teardown", "passed"),
        rec("t.py::bad", "setup", "passed"), rec("t.py::bad", "call", "failed"), rec("t.py::bad", "teardown", "passed"),
        rec("t.py::fixture", "setup", "failed"), rec("t.py::fixture", "teardown", "passed"),
        rec("t.py::down", "setup", "passed"), rec("t.py::down", "call", "passed"), rec("t.py::down", "teardown", "failed"),
        rec("t.py::skip", "setup", "skipped"), rec("t.py::skip", "teardown", "passed"),
        rec("t.py::xf", "setup", "passed"), rec("t.py::xf", "call", "skipped", xfail=True),
        rec("t.py::xp", "setup", "passed"), rec("t.py::xp", "call", "passed", xfail=True),
        rec("t.py::cut", "setup", "passed"),  # the run was killed during the call
        {"kind": "collect", "nodeid": "broken_test.py", "text": "E   ImportError: nope"},
    ]
    out = pure.test_outcomes(records)
    assert {k: v["outcome"] for k, v in out.items()} == {
        "t.py::ok": "passed", "t.py::bad": "failed", "t.py::fixture": "error", "t.py::down": "error",
        "t.py::skip": "skipped", "t.py::xf": "xfailed", "t.py::xp": "xpassed", "t.py::cut": "error",
    }
    summary = pure.run_summary(records, out)
    assert (summary["tests"], summary["passed"], summary["failed"], summary["errors"], summary["skipped"]) == (8, 1, 1, 3, 1)
    assert summary["collect_errors"] == ["broken_test.py"]


def test_changed_hunks_and_the_findings_they_apply():
    before = "import torch\n\nm = torch.jit.script(M())\ny = m(x)\n"
    after = "import torch\n\nm = torch.export.export(M(), (x,)).module()\ny = m(x)\n"
    hunks = {"a.py": pure.changed_hunks(before, after)}
    assert hunks["a.py"] == [(3, 4, 3, 4)]
    findings = [
        {"rule": "TSX302", "path": "a.py", "line": 3, "end_line": 3, "column": 5, "fix": "unsafe", "message": "script"},
        {"rule": "TSX101", "path": "a.py", "line": 4, "end_line": 4, "column": 1, "fix": "safe", "message": "other"},
        {"rule": "TSX401", "path": "b.py", "line": 3, "end_line": 3, "column": 1, "fix": "unsafe", "message": "unchanged file"},
    ]
    assert [f["rule"] for f in pure.applied_findings(findings, "unsafe", hunks)] == ["TSX302"]
    assert pure.applied_findings(findings, "safe", hunks) == []  # TSX302 is unsafe; TSX101's line did not change


def test_a_failure_is_blamed_on_the_rewrite_its_traceback_runs_through(tmp_path):
    tree = tmp_path / "pkg-1.0"
    hunks = {"pkg/ops.py": [(10, 12, 10, 15)], "tests/test_ops.py": [(5, 6, 5, 6)]}
    applied = [
        {"rule": "TSX401", "path": "pkg/ops.py", "line": 10, "end_line": 11, "column": 5, "fix": "unsafe", "message": "cond"},
        {"rule": "TSX302", "path": "tests/test_ops.py", "line": 5, "end_line": 5, "column": 9, "fix": "unsafe", "message": "export"},
    ]
    report = {"frames": [
        {"path": "tests/test_ops.py", "line": 20, "exc": "", "lines": []},
        {"path": str(tree / "pkg" / "ops.py"), "line": 13, "exc": "RuntimeError", "lines": []},
        {"path": "/usr/lib/python3/site-packages/torch/_higher_order_ops/cond.py", "line": 99, "exc": "", "lines": []},
    ]}
    causes = pure.attribute(report, "tests/test_ops.py::test_a", tree, hunks, applied)
    assert [(c["rule"], c["via"]) for c in causes] == [("TSX401", "frame pkg/ops.py:13")]
    # no frame inside a rewritten run of lines: every applied finding of the files involved, labelled weak
    report = {"frames": [{"path": "tests/test_ops.py", "line": 30, "exc": "", "lines": []}]}
    causes = pure.attribute(report, "tests/test_ops.py::test_b", tree, hunks, applied)
    assert [(c["rule"], c["via"]) for c in causes] == [("TSX302", "same file tests/test_ops.py")]


def test_a_torchscript_compile_error_is_blamed_on_the_decorator_removed_from_its_function(tmp_path):
    """TSX101 removed `@torch.jit.unused` from a method a still-scripted module holds: TorchScript's
    error names a line of that function (not on the Python traceback), below the deleted line."""
    tree = tmp_path / "pkg-1.0"
    before = textwrap.dedent("""\
        import torch


        class Net(torch.nn.Module):
            @torch.jit.unused
            @property
            def symbols(self) -> tuple[str, ...]:
                return tuple(str(z) for z in self.numbers)

            def forward(self, x):
                if not torch.jit.is_scripting():
                    x = x + 1
                return x
    """)
    after = before.replace("    @torch.jit.unused\n", "")
    (tree / "pkg").mkdir(parents=True)
    (tree / "pkg" / "nn.py").write_text(after)
    hunks = {"pkg/nn.py": pure.changed_hunks(before, after)}
    assert hunks["pkg/nn.py"] == [(5, 6, 5, 5)]
    applied = [{"rule": "TSX101", "path": "pkg/nn.py", "line": 5, "end_line": 5, "column": 5, "fix": "safe", "message": "unused"},
               {"rule": "TSX501", "path": "pkg/nn.py", "line": 11, "end_line": 12, "column": 9, "fix": "safe", "message": "guard"}]
    message = ('RuntimeError: \nExpression of type dots cannot be used in a type expression:\n'
               f'  File "{tree}/pkg/nn.py", line 5\n    @property\n    def symbols(self) -> tuple[str, ...]:\n')
    report = {"frames": [{"chain": 0, "path": "tests/test_nn.py", "line": 9, "exc": "RuntimeError", "lines": ["> m = torch.jit.script(Net())"]},
                         {"chain": 0, "path": "/venv/lib/python3.11/site-packages/torch/jit/_script.py", "line": 1500,
                          "exc": "RuntimeError", "lines": []}],
              "messages": [message]}
    assert pure.frames_in_tree(report, tree) == [("tests/test_nn.py", 9), ("pkg/nn.py", 5)]
    causes = pure.attribute(report, "tests/test_nn.py::test_script", tree, hunks, applied)
    assert [(c["rule"], c["line"], c["via"]) for c in causes] == [("TSX101", 5, "frame pkg/nn.py:5")]
    # a location further down the same function still finds the decorator removed above it
    report["messages"] = [message.replace("line 5", "line 7")]
    causes = pure.attribute(report, "tests/test_nn.py::test_script", tree, hunks, applied)
    assert [(c["rule"], c["via"]) for c in causes] == [("TSX101", "function symbols at pkg/nn.py:7")]
    assert pure.error_line(report) == "RuntimeError: Expression of type dots cannot be used in a type expression:"
    assert pure.enclosing_def(after, 12) == ("forward", 9, 12)
    # a rewrite below the failing line of a function never ran: it is not blamed; one above it is
    report = {"frames": [{"chain": 0, "path": "pkg/nn.py", "line": 9, "exc": "RuntimeError", "lines": []}]}
    hunks["pkg/nn.py"].append((11, 13, 10, 11))  # say the guard in forward was rewritten
    causes = pure.attribute(report, "tests/test_nn.py::test_script", tree, hunks, applied)
    assert {c["via"] for c in causes} == {"same file pkg/nn.py"}  # only the weak link is left
    report["frames"][0]["line"] = 12
    causes = pure.attribute(report, "tests/test_nn.py::test_script", tree, hunks, applied)
    assert [(c["rule"], c["via"]) for c in causes] == [("TSX501", "function forward at pkg/nn.py:12")]


def test_a_knock_on_compile_failure_says_so(tmp_path):
    report = _failure("/venv/lib/python3.11/site-packages/torch/jit/_recursive.py", 400, "cu.define(...)",
                      "RuntimeError: Can't redefine method: __symbols_getter on class: __torch__.pkg.m.Net (of Python compilation unit at: 0x55c1ee077920)")
    cls, reason = pure.classify("tests/t.py::test_b", report, tmp_path, {"tests/t.py"}, [], {})
    assert cls == "broken" and reason.endswith("(a knock-on: an earlier test in the same process failed to compile this class)")


def _failure(path, line, source, message):
    return {"frames": [{"path": path, "line": line, "exc": message.split(":")[0], "lines": [f">       {source}", f"E       {message}"]}],
            "crash": {"path": path, "line": line, "message": message}, "text": message}


def test_classification_counts_apart_only_assertions_on_torchscript_itself(tmp_path):
    tree = tmp_path / "pkg-1.0"
    tests = {"tests/test_m.py"}
    ts = _failure("tests/test_m.py", 12, "assert isinstance(m, torch.jit.ScriptModule)", "AssertionError: assert False")
    assert pure.classify("tests/test_m.py::t", ts, tree, tests, [])[0] == "torchscript-assertion"
    graph = _failure("tests/test_m.py", 14, 'assert "aten::add" in str(m.graph)', "AttributeError: 'GraphModule' object has no attribute 'graph'")
    assert pure.classify("tests/test_m.py::t", graph, tree, tests, [])[0] == "torchscript-assertion"
    # the same kind of statement inside the library is a breakage, not a TorchScript assertion
    lib = _failure("pkg/m.py", 14, "assert isinstance(m, torch.jit.ScriptModule)", "AssertionError")
    assert pure.classify("tests/test_m.py::t", lib, tree, tests, [])[0] == "broken"
    # a wrong value is a breakage, whatever the test looks like
    value = _failure("tests/test_m.py", 20, "assert torch.allclose(out, ref)", "AssertionError: assert False")
    cls, reason = pure.classify("tests/test_m.py::t", value, tree, tests, [])
    assert cls == "broken" and "no rewritten code on its traceback" in reason
    export = _failure("tests/test_m.py", 9, "m = torch.export.export(f, (x,)).module()", "ValueError: Expected `mod` to be an instance of `torch.nn.Module`")
    cls, reason = pure.classify("tests/test_m.py::t", export, tree, tests, [{"rule": "TSX302"}])
    assert cls == "broken" and reason.startswith("ValueError: Expected `mod`")
    assert pure.classify("tests/test_m.py::t", None, tree, tests, [])[0] == "not-run"


def test_the_root_cause_is_named_first_and_decides_the_class(tmp_path):
    tree = tmp_path / "pkg-1.0"
    tests = {"tests/test_jit.py"}
    chained = {
        "frames": [
            {"chain": 0, "path": "tests/test_jit.py", "line": 57, "exc": "AttributeError",
             "lines": [">           m = torch.export.export(F(f), (x, wavelet), dynamic_shapes=({i: Dim.AUTO for i in range(wavelet.dim())},))"]},
            {"chain": 1, "path": "tests/test_jit.py", "line": 46, "exc": "Failed", "lines": [">       with pytest.warns(Warning):"]},
        ],
        "messages": ["AttributeError: 'WaveletTensorTuple' object has no attribute 'dim'",
                     "Failed: DID NOT WARN. No warnings of type (<class 'Warning'>,) were emitted.\n Emitted warnings: []."],
    }
    assert pure.error_line(chained) == ("AttributeError: 'WaveletTensorTuple' object has no attribute 'dim' "
                                      "(then: Failed: DID NOT WARN. No warnings of type (<class 'Warning'>,) were emitted.)")
    assert pure.failing_source(chained)[:2] == ("tests/test_jit.py", 57)
    hunks = {"tests/test_jit.py": [(46, 51, 47, 58)]}
    assert pure.classify("tests/test_jit.py::test_a", chained, tree, tests, [{"rule": "TSX303"}], hunks)[0] == "broken"
    # the warning alone is missing, around a rewritten TorchScript call: the test checked TorchScript's warning
    alone = {"frames": [chained["frames"][1]], "messages": [chained["messages"][1]]}
    cls, reason = pure.classify("tests/test_jit.py::test_a", alone, tree, tests, [], hunks)
    assert cls == "torchscript-assertion" and "pytest.warns(Warning)" in reason
    assert pure.classify("tests/test_jit.py::test_a", alone, tree, tests, [], {})[0] == "broken"  # nothing rewritten there


def test_compare_names_each_test_that_fails_only_after(tmp_path):
    tree = tmp_path / "pkg-1.0"
    before = {"t.py::a": {"outcome": "passed"}, "t.py::b": {"outcome": "passed"}, "u.py::c": {"outcome": "passed"},
              "t.py::d": {"outcome": "failed"}, "t.py::e": {"outcome": "passed"}}
    fail = _failure("t.py", 3, "y = f(x)", "RuntimeError: boom")
    after = {"t.py::a": {"outcome": "passed", "report": None}, "t.py::b": {"outcome": "failed", "report": fail},
             "t.py::d": {"outcome": "passed", "report": None}, "t.py::e": {"outcome": "skipped", "report": None}}
    records = [{"kind": "collect", "nodeid": "u.py", "text": "E   ImportError: cannot import name 'cond'"}]
    out = pure.compare(before, after, records, tree, {}, [], {"t.py", "u.py"})
    got = {r["test"]: (r["class"], r["after"]) for r in out["regressions"]}
    assert got == {"t.py::b": ("broken", "failed"), "u.py::c": ("not-run", "missing"), "t.py::e": ("broken", "skipped")}
    assert next(r for r in out["regressions"] if r["test"] == "u.py::c")["reason"] == "collection error: ImportError: cannot import name 'cond'"
    assert out["passed_only_after"] == ["t.py::d"]


APPLY_OUT = """\
julius/resample.py: fixed 0, left 1
tests/test_bands.py: fixed 1, left 0
tests/test_filters.py: fixed 0, left 1

Left for a person:
  julius/resample.py:143:14: TSX401 `elif output_length < 0 ...:` depends on a tensor value
  tests/test_filters.py:65:18: TSX302 `torch.jit.script(...)` not rewritten: needs example inputs [**]

Fixed 1 finding in 1 file. Found 2 TorchScript findings in 2 of 15 files (1 more with `--unsafe-fixes` [**]).
"""


def test_parse_apply_left():
    left = pure.parse_apply_left(APPLY_OUT)
    assert [(f["rule"], f["path"], f["line"], f["column"]) for f in left] == [
        ("TSX401", "julius/resample.py", 143, 14), ("TSX302", "tests/test_filters.py", 65, 18)]
    assert left[1]["message"].endswith("needs example inputs")
    assert pure.parse_apply_left(APPLY_OUT.replace("Found 2", "Found 3")) is None  # disagrees: ask scan instead
    assert pure.parse_apply_left("\nFixed 0 findings in 0 files. Found 0 TorchScript findings in 0 of 3 files.\n") == []
    assert pure.rule_counts(left) == {"TSX302": 1, "TSX401": 1}


def _results():
    mode = {"after": {"passed": 8}, "files_changed": ["pkg/m.py", "tests/t.py"], "findings_fixed": {"TSX302": 2},
            "findings_left": {"TSX401": 1}, "passed_only_after": [],
            "regressions": [
                {"test": "tests/t.py::test_a", "class": "broken", "after": "failed", "reason": "ValueError: Expected `mod` | x",
                 "causes": [{"rule": "TSX302", "path": "tests/t.py", "line": 5, "via": "frame tests/t.py:5", "message": "m", "fix": "unsafe"}]},
                {"test": "tests/t.py::test_graph", "class": "torchscript-assertion", "after": "failed",
                 "reason": "asserts on TorchScript itself: `m.graph`", "causes": []},
            ]}
    return {"date": "2026-11-30", "torch": "2.13.0", "python": "3.11.7", "ts2export": "abc1234", "note": "Before the rework.",
            "packages": [
                {"name": "pkg", "version": "1.0", "tests": ["tests"], "k": "jit", "subset": "the jit tests",
                 "before": {"tests": 12, "passed": 10, "failed": 1, "errors": 0, "skipped": 1, "seconds": 3.0},
                 "modes": {"unsafe": mode}},
                {"name": "gone", "version": "2.0", "error": "the sdist of gone 2.0 has no tests", "modes": {}},
            ]}


def test_render_markdown_and_text():
    md = pure.render_markdown(_results())
    assert md.startswith(pure.DOC_BEGIN) and md.endswith(pure.DOC_END)
    assert "Measured 2026-11-30 with torch 2.13.0 (CPU), Python 3.11.7, ts2export at `abc1234`. Before the rework." in md
    assert "| pkg 1.0 | 12 | 10 | `apply --unsafe-fixes` | 8 | 1 | 1 | 2 | 2 | 1 (TSX401 1) |" in md
    assert "| gone 2.0 | – |" in md and "error: the sdist of gone 2.0 has no tests" in md
    assert "- `tests/t.py::test_a`, broken: ValueError: Expected `mod` \\| x — TSX302 at `tests/t.py:5`" in md
    assert "- `tests/t.py::test_graph`, torchscript-assertion: asserts on TorchScript itself" in md
    text = pure.render_text(_results())
    assert ("apply --unsafe-fixes: 8 passed after; 1 fail only after, 1 TorchScript-asserting; 2 files changed; "
            "fixed 2 (TSX302 2 matched to changed lines); left TSX401 1") in text
    assert "<- TSX302 tests/t.py:5 (frame tests/t.py:5)" in text


def test_findings_held_behind_an_unfollowable_entry_point_and_the_entry_points_reached():
    held = ("this code may be compiled by TorchScript through `torch.jit.script(...)` at tests/util.py:12:18, "
            "which stays and whose target ts2export cannot follow")
    findings = [
        {"rule": "TSX101", "held_back": held},
        {"rule": "TSX102", "held_back": "with --unsafe-fixes: " + held},
        {"rule": "TSX103", "held_back": "`f` is still compiled by TorchScript through `@torch.jit.script` on `f` at a.py:3:1, which stays"},
        {"rule": "TSX104", "held_back": None},
        {"rule": "TSX105"},
    ]
    assert pure.held_unfollowable(findings) == 2
    assert pure.held_unfollowable([]) == 0
    entry_points = [{"path": "tests/util.py", "line": 12, "reached": True, "compiled": ["pkg/m.py:Layer"]},
                    {"path": "tests/util.py", "line": 20, "reached": False, "compiled": None}]
    assert pure.entry_point_counts(entry_points) == {"entry_points_reached": 1, "entry_points_total": 2}
    assert pure.entry_point_counts([]) == {"entry_points_reached": 0, "entry_points_total": 0}


def test_mode_labels():
    assert [pure.mode_label(m) for m in rp.MODES] == ["apply", "apply --unsafe-fixes", "apply --unsafe-fixes --recording"]
    assert rp.parse_args(["--modes", "unsafe,record"]).modes == ["unsafe", "record"]
    assert rp.parse_args([]).modes == ["safe", "unsafe"]
    with pytest.raises(SystemExit):
        rp.parse_args(["--modes", "recorded"])


def _recorded_results():
    results = _results()
    pkg = results["packages"][0]
    pkg["modes"]["unsafe"].update({"seconds": 4.2, "held_unfollowable": 3})
    pkg["modes"]["unsafe"]["after"]["seconds"] = 5.0
    pkg["modes"]["record"] = {
        "after": {"passed": 10, "seconds": 6.4}, "files_changed": ["pkg/m.py"], "findings_fixed": {"TSX302": 3},
        "findings_left": {}, "passed_only_after": [], "regressions": [], "seconds": 7.6, "held_unfollowable": 0,
        "record_run": {"tests": 12, "passed": 10, "seconds": 61.3}, "entry_points_reached": 2, "entry_points_total": 3,
    }
    return results


def test_render_the_recording_and_the_time_of_each_step():
    results = _recorded_results()
    pkg = results["packages"][0]
    assert pure.step_times(pkg, pkg["modes"]["record"]) == {"tests before": 3.0, "record run": 61.3, "apply": 7.6, "tests after": 6.4}
    assert pure.step_times(pkg, pkg["modes"]["unsafe"])["record run"] is None
    text = pure.render_text(results)
    assert "     3 held behind an unfollowable entry point\n     times: tests before 3 s, apply 4 s, tests after 5 s" in text
    assert "apply --unsafe-fixes --recording: 10 passed after; 0 fail only after" in text
    assert ("0 held behind an unfollowable entry point; entry points reached 2 of 3; record run 10 passed of 12\n"
            "     times: tests before 3 s, record run 61 s, apply 8 s, tests after 6 s") in text
    md = pure.render_markdown(results)
    assert "| pkg 1.0 | 12 | 10 | `apply --unsafe-fixes` | 8 | 1 | 1 | 2 | 2 | 1 (TSX401 1) |" in md  # the table as before
    assert "| pkg 1.0 | 12 | 10 | `apply --unsafe-fixes --recording` | 10 | 0 | 0 | 1 | 3 | 0 (none) |" in md
    assert "| package | mode | findings held behind an unfollowable entry point | entry points the recording reached |" in md
    assert "| pkg 1.0 | `apply --unsafe-fixes` | 3 | – | 3 | – | 4 | 5 |" in md
    assert "| pkg 1.0 | `apply --unsafe-fixes --recording` | 0 | 2 of 3 | 3 | 61 | 8 | 6 |" in md
    assert "entry points the recording reached" not in pure.render_markdown(_results())  # older results: no such table


def test_cases_of_one_test_that_fail_alike_are_grouped_in_the_doc():
    results = _results()
    mode = results["packages"][0]["modes"]["unsafe"]
    cause = {"rule": "TSX301", "path": "tests/t.py", "line": 46, "via": "same file tests/t.py", "message": "m", "fix": "unsafe"}
    mode["regressions"] = [{"test": f"tests/t.py::test_jit[{i}]", "class": "broken", "after": "failed",
                            "reason": "AttributeError: no dim", "causes": [cause]} for i in range(3)]
    mode["regressions"].append({"test": "tests/t.py::test_jit[9]", "class": "broken", "after": "failed",
                                "reason": "RuntimeError: other", "causes": []})
    md = pure.render_markdown(results)
    assert "- `tests/t.py::test_jit` (3 cases), broken: AttributeError: no dim — TSX301 at `tests/t.py:46` (same file only)" in md
    assert "- `tests/t.py::test_jit[9]`, broken: RuntimeError: other — no rewritten code found on its path" in md


def test_the_sdist_is_found_whatever_separators_its_name_uses():
    assert rp.sdist_pattern("mace-torch", "0.3.16").match("mace_torch-0.3.16.tar.gz")
    assert rp.sdist_pattern("torch-nl", "0.3").match("torch_nl-0.3.tar.gz")
    assert rp.sdist_pattern("pytorch-ignite", "0.5.5").match("pytorch-ignite-0.5.5.zip")
    assert rp.sdist_pattern("e3nn", "0.6.0").match("E3NN-0.6.0.tar.gz")
    assert not rp.sdist_pattern("e3nn", "0.6.0").match("e3nn-0.6.01.tar.gz")
    assert not rp.sdist_pattern("torch-nl", "0.3").match("torchnl-0.3.tar.gz")


def test_exit_code():
    results = _results()
    assert rp.exit_code(results) == 2  # "gone" could not be measured
    del results["packages"][1]
    assert rp.exit_code(results) == 1  # test_a is broken
    mode = results["packages"][0]["modes"]["unsafe"]
    mode["regressions"] = [r for r in mode["regressions"] if r["class"] == "torchscript-assertion"]
    assert rp.exit_code(results) == 0  # TorchScript-asserting tests are counted apart


def test_update_doc_replaces_only_the_generated_section():
    section = pure.render_markdown(_results())
    doc = f"# Reliability\n\nIntro.\n\n{pure.DOC_BEGIN}\nold table\n{pure.DOC_END}\n\n## Later\n"
    new = pure.update_doc(doc, section)
    assert new == f"# Reliability\n\nIntro.\n\n{section}\n\n## Later\n"
    assert pure.update_doc(new, section) == new
    assert pure.update_doc("# Reliability\n", section) == f"# Reliability\n\n{section}\n"


@pytest.mark.slow
@pytest.mark.parametrize("workers", [0, 2])
def test_the_probe_logs_every_outcome_frame_and_imported_copy(tmp_path, workers):
    """The pytest plugin, run for real on a small generated suite (serial and under xdist)."""
    tree = tmp_path / "pkg-1.0"
    (tree / "mypkg").mkdir(parents=True)
    (tree / "mypkg" / "__init__.py").write_text("def boom(x):\n    raise RuntimeError('boom ' + str(x))\n")
    (tree / "tests").mkdir()
    (tree / "tests" / "test_a.py").write_text(textwrap.dedent("""\
        import pytest
        import mypkg

        def test_pass():
            assert True

        def test_fail():
            mypkg.boom(3)

        @pytest.fixture
        def bad():
            raise ValueError("fixture")

        def test_error(bad):
            pass

        def test_skip():
            pytest.skip("no")

        def test_chain():
            try:
                mypkg.boom(4)
            except RuntimeError:
                raise ValueError("then this")

        @pytest.mark.xfail(reason="known")
        def test_xfail():
            assert False
    """))
    (tree / "tests" / "test_broken.py").write_text("import mypkg.absent\n")
    probe = tmp_path / "probe"
    probe.mkdir()
    (probe / f"{rp.PROBE_MODULE}.py").write_text(rp.PROBE.read_text())
    log = tmp_path / "run.jsonl"
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(tree), str(probe)]), "TS2EXPORT_REAL_LOG": str(log),
           "TS2EXPORT_REAL_MODULE": "mypkg"}
    cmd = [sys.executable, "-m", "pytest", "-p", rp.PROBE_MODULE, "-p", "no:cacheprovider", "-q", "--continue-on-collection-errors", "tests"]
    if workers:
        cmd += ["-n", str(workers)]
    subprocess.run(cmd, cwd=tree, env=env, capture_output=True, text=True, timeout=300)
    records = pure.read_log(log)
    outcomes = pure.test_outcomes(records)
    assert {k: v["outcome"] for k, v in outcomes.items()} == {
        "tests/test_a.py::test_pass": "passed", "tests/test_a.py::test_fail": "failed",
        "tests/test_a.py::test_error": "error", "tests/test_a.py::test_skip": "skipped",
        "tests/test_a.py::test_xfail": "xfailed", "tests/test_a.py::test_chain": "failed"}
    assert len([r for r in records if r.get("kind") == "test"]) == 17  # each phase once, never twice under xdist
    assert pure.run_summary(records, outcomes)["collect_errors"] == ["tests/test_broken.py"]
    fail = outcomes["tests/test_a.py::test_fail"]["report"]
    assert pure.frames_in_tree(fail, tree) == [("tests/test_a.py", 8), ("mypkg/__init__.py", 2)]
    assert pure.error_line(fail) == "RuntimeError: boom 3"
    assert pure.failing_source(fail)[2] == "raise RuntimeError('boom ' + str(x))"
    chain = outcomes["tests/test_a.py::test_chain"]["report"]
    assert pure.error_line(chain) == "RuntimeError: boom 4 (then: ValueError: then this)"
    path, line, source = pure.failing_source(chain)
    assert (pure.relative_to_tree(path, tree), line, source) == ("mypkg/__init__.py", 2, "raise RuntimeError('boom ' + str(x))")
    files = pure.module_files(records)
    assert files and all(pure.relative_to_tree(f, tree) == "mypkg/__init__.py" for f in files)


def test_a_git_source_names_a_repository_and_a_full_commit(tmp_path):
    sha = "3695153f40186723662fc229e81566ee1a8cdf4d"
    src = rp.parse_git_source(f"github:kornia/kornia@{sha.upper()}")
    assert (src.kind, src.repo, src.commit, src.label) == ("github", "kornia/kornia", sha, "github:kornia/kornia")
    assert src.url == "https://github.com/kornia/kornia.git"
    assert rp.parse_git_source(f"github:pyg-team/pytorch_geometric.git@{sha}").repo == "pyg-team/pytorch_geometric"
    local = rp.parse_git_source(f"git:/srv/repos/x.git@{sha}")
    assert (local.kind, local.repo, local.url) == ("git", "/srv/repos/x.git", None)
    mirror, work = tmp_path / "mirror", tmp_path / "work"
    assert src.candidates(work, [mirror]) == [mirror / "kornia+kornia" / "repo", mirror / "kornia+kornia.git",
                                              mirror / "kornia" / "kornia.git", work / "git" / "kornia+kornia.git"]
    for bad in ("github:kornia/kornia", "github:kornia/kornia@v0.8.3", f"github:kornia@{sha}", f"svn:x/y@{sha}",
                f"github:kornia/kornia@{sha[:12]}", f"github:a/b/c@{sha}"):
        with pytest.raises(ValueError):
            rp.parse_git_source(bad)
    pkg = rp.Package(name="p", version="1", import_name="p", migrate=("p",), tests=("tests",), source=f"github:o/p@{sha}")
    assert pkg.git == rp.GitSource("github", "o/p", sha)
    assert rp.venv_key(pkg, "py")["source"] == pkg.source
    assert "source" not in rp.venv_key(rp.PACKAGES["julius"], "py")  # the sdist packages keep their environments
    for name in ("kornia", "torch-geometric"):  # the entries taken from git pin a full commit
        assert len(rp.PACKAGES[name].git.commit) == 40


def _git(*args, cwd):
    env = {**os.environ, "GIT_AUTHOR_NAME": "t", "GIT_AUTHOR_EMAIL": "t@t", "GIT_COMMITTER_NAME": "t",
           "GIT_COMMITTER_EMAIL": "t@t", "GIT_CONFIG_GLOBAL": os.devnull, "GIT_CONFIG_SYSTEM": os.devnull}
    return subprocess.run(["git", *args], cwd=cwd, env=env, check=True, capture_output=True, text=True).stdout.strip()


def test_a_git_package_is_checked_out_at_its_commit_from_a_mirror(tmp_path):
    """A tiny repository (no network): the bare copy in a mirror folder is found, the tree at the pinned commit
    (not the branch's newer one) is unpacked and cached, and a commit no copy holds is an error."""
    origin = tmp_path / "origin"
    (origin / "mypkg").mkdir(parents=True)
    (origin / "tests").mkdir()
    _git("init", "-q", "-b", "main", cwd=origin)
    (origin / "mypkg" / "__init__.py").write_text("VALUE = 1\n")
    (origin / "tests" / "test_v.py").write_text("import mypkg\n\ndef test_v():\n    assert mypkg.VALUE == 1\n")
    _git("add", "-A", cwd=origin)
    _git("commit", "-q", "-m", "one", cwd=origin)
    first = _git("rev-parse", "HEAD", cwd=origin)
    (origin / "mypkg" / "__init__.py").write_text("VALUE = 2\n")
    (origin / "mypkg" / "later.py").write_text("")
    _git("commit", "-q", "-am", "two", cwd=origin)
    _git("add", "-A", cwd=origin)
    _git("commit", "-q", "-m", "three", cwd=origin)
    mirror = tmp_path / "mirror"
    _git("clone", "-q", "--bare", str(origin), str(mirror / "me+mypkg" / "repo"), cwd=tmp_path)
    work = tmp_path / "work"
    pkg = rp.Package(name="mypkg", version="1.0", import_name="mypkg", migrate=("mypkg", "tests"), tests=("tests",),
                     source=f"github:me/mypkg@{first}")
    tree, commit = rp.ensure_checkout(pkg, work, [mirror], skip_install=True)
    assert commit == first
    assert tree == work / "src" / f"mypkg-1.0-git-{first[:12]}"
    assert (tree / "mypkg" / "__init__.py").read_text() == "VALUE = 1\n"
    assert not (tree / "mypkg" / "later.py").exists() and not (tree / ".git").exists()
    assert (tree / ".unpacked").read_text().split() == ["github:me/mypkg", first]
    (tree / "mypkg" / "__init__.py").write_text("VALUE = 1  # cached\n")
    assert rp.ensure_checkout(pkg, work, [mirror], skip_install=True)[0] == tree
    assert "cached" in (tree / "mypkg" / "__init__.py").read_text()  # unpacked once
    assert ".unpacked" not in {p.name for p in rp.copy_tree(tree, tmp_path / "copy" / tree.name).iterdir()}
    # a non-bare repository named by path works too
    local = dataclasses.replace(pkg, name="local", source=f"git:{origin}@{first}")
    assert (rp.ensure_checkout(local, work, [], skip_install=True)[0] / "tests" / "test_v.py").exists()
    # the configuration names a path the commit lacks
    with pytest.raises(rp.Failure, match="has no mypkg/later.py"):
        rp.ensure_checkout(dataclasses.replace(pkg, name="m2", migrate=("mypkg/later.py",)), work, [mirror], True)
    # no copy holds the commit (and --skip-install: no clone)
    absent = dataclasses.replace(pkg, name="m3", source="github:me/mypkg@" + "0" * 40)
    with pytest.raises(rp.Failure, match="no copy of github:me/mypkg holds commit 0000"):
        rp.ensure_checkout(absent, work, [mirror], skip_install=True)
    with pytest.raises(rp.Failure, match="looked in none of"):
        rp.ensure_checkout(dataclasses.replace(pkg, name="m4", source=f"github:me/other@{first}"), work, [mirror], True)


def test_the_probe_can_sort_the_cases_of_each_function_by_id(tmp_path):
    """TS2EXPORT_REAL_SORT_CASES=1: cases parametrized over a per-process order (a set of objects hashed by
    address) are put in id order within their function, so xdist workers collect the same list; functions
    keep their order."""
    items = [SimpleNamespace(nodeid=n) for n in (
        "t.py::test_b[int64-cpu]", "t.py::test_b[int32-cpu]", "t.py::test_a", "t.py::C::test_c[y]", "t.py::C::test_c[x]")]
    probe = _load("real_packages_probe")
    probe._sort_cases(items)
    assert [i.nodeid for i in items] == ["t.py::test_b[int32-cpu]", "t.py::test_b[int64-cpu]", "t.py::test_a",
                                         "t.py::C::test_c[x]", "t.py::C::test_c[y]"]
    tree = tmp_path / "pkg-1.0"
    (tree / "tests").mkdir(parents=True)
    (tree / "tests" / "test_s.py").write_text(textwrap.dedent("""\
        import pytest

        @pytest.mark.parametrize("v", ["z", "a", "m"])
        def test_z(v):
            pass

        def test_a():
            pass
    """))
    (tmp_path / "probe").mkdir()
    (tmp_path / "probe" / f"{rp.PROBE_MODULE}.py").write_text(rp.PROBE.read_text())
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(tree), str(tmp_path / "probe")]),
           "TS2EXPORT_REAL_LOG": str(tmp_path / "run.jsonl")}
    cmd = [sys.executable, "-m", "pytest", "-p", rp.PROBE_MODULE, "-p", "no:cacheprovider", "-q", "--co", "tests"]
    plain = subprocess.run(cmd, cwd=tree, env=env, capture_output=True, text=True, timeout=120).stdout.split()
    assert plain[:4] == ["tests/test_s.py::test_z[z]", "tests/test_s.py::test_z[a]", "tests/test_s.py::test_z[m]",
                         "tests/test_s.py::test_a"]
    env["TS2EXPORT_REAL_SORT_CASES"] = "1"
    ordered = subprocess.run(cmd, cwd=tree, env=env, capture_output=True, text=True, timeout=120).stdout.split()
    assert ordered[:4] == ["tests/test_s.py::test_z[a]", "tests/test_s.py::test_z[m]", "tests/test_s.py::test_z[z]",
                           "tests/test_s.py::test_a"]
