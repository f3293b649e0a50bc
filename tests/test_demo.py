"""The demo a newcomer runs first (`bash scripts/demo.sh`, ts2export.harness.demo): one page a person
reads in a minute (the findings per rule, what is held back grouped by cause, two diffs, where the
report went), and the HTML report it writes renders in headless chromium. The whole corpus runs in
`bash scripts/demo.sh`; here a few cases of it, chosen to hold a held-back unit and both diffs."""

from __future__ import annotations

import io
import re

import pytest

from tests.test_report import find_chromium, run_chromium
from ts2export.harness import demo

CASES = ("control_flow/cond_gate", "callsites/deploy_and_serve", "never_broken/traced_data_branch")


@pytest.fixture(scope="module")
def outcomes():
    cases = [c for c in demo.all_cases() if c.name in CASES]
    assert len(cases) == len(CASES)
    return demo.analyse(cases, jobs=1)


def test_the_page_reads_in_a_minute(outcomes, tmp_path):
    report = tmp_path / "report.html"
    demo.write_report(outcomes, report)
    out = io.StringIO()
    demo.summary_page(outcomes, report, 1.0, out)
    page = out.getvalue()
    lines = page.splitlines()
    assert len(lines) < 150
    assert lines[0] == "ts2export over its bundled corpus: 3 TorchScript-era programs, 7 files"
    table = re.search(r"^rule +found +fixed +held +left +summary$", page, re.M)
    assert table is not None
    total = re.search(r"^total +(\d+) +(\d+) +(\d+) +(\d+)", page, re.M)
    found, fixed, held, left = (int(g) for g in total.groups())
    assert found == fixed + held + left and fixed > 0 and held == 4  # the traced head's unit and its branch
    assert "Held back, by cause (4 fixes" in page
    assert "the trace recorded one path through TSX401 in `...` (<file>)" in page
    assert "e.g. never_broken/traced_data_branch/main.py:17 TSX301: the trace recorded one path" in page
    for name, what in demo.SHOWCASE:
        assert f"== {name}: {what}" in page
    assert "+        # Data-dependent branch (was `if x.sum() > 0:`)" in page
    assert "+    torch.export.save(traced, ARTIFACT, extra_files=meta)" in page
    assert f"Report: {report} (one self-contained page: open it in a browser)" in page
    assert report.is_file() and report.read_text().startswith("<!DOCTYPE html>")


def test_full_page_names_every_case(outcomes):
    out = io.StringIO()
    demo.full_page(outcomes, out)
    text = out.getvalue()
    assert [line[3:] for line in text.splitlines() if line.startswith("== ")] == [o.case for o in outcomes]
    assert "[held back: the trace recorded one path through TSX401" in text
    assert "+++ b/deploy.py" in text


def test_an_unknown_case_is_one_line(capsys):
    with pytest.raises(SystemExit) as exc:
        demo.main(["--case", "nope/missing"])
    assert exc.value.code == 2
    assert "no such corpus case: nope/missing" in capsys.readouterr().err


@pytest.mark.slow
def test_the_demo_report_renders_in_headless_chromium(outcomes, tmp_path, artifact_dir):
    chromium = find_chromium()
    if chromium is None:  # .ci/run installs Debian's chromium; only a machine without it skips
        pytest.skip("chromium is not installed (apt-get install chromium)")
    report = artifact_dir / "demo-report.html"
    demo.write_report(outcomes, report)
    dom = run_chromium(chromium, tmp_path, report, "--dump-dom")
    assert dom.returncode == 0, dom.stderr[-2000:]
    for chart in ("chart-categories", "chart-folders", "chart-rules"):
        assert f'<svg id="{chart}"' in dom.stdout, chart
    assert "never_broken" in dom.stdout and "the trace recorded one path" in dom.stdout
    shot = artifact_dir / "demo-report.png"
    run = run_chromium(chromium, tmp_path, report, "--window-size=1200,2000", f"--screenshot={shot}")
    assert run.returncode == 0 and shot.is_file(), run.stderr[-2000:]
    from PIL import Image

    with Image.open(shot) as image:
        assert image.size == (1200, 2000)
        assert len(image.convert("RGB").getcolors(maxcolors=1 << 20)) > 50  # a rendered page, not a blank one
