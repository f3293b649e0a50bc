"""The migration report: its data, the markdown comment, and the HTML page rendered by headless chromium."""

import os
import re
import shutil
import subprocess
from pathlib import Path

import pytest

from tests.test_ci_gate import CLEAN, commit, sample_repo
from ts2export.ci.baseline import fingerprint_findings
from ts2export.engine import FileResult
from ts2export.ci.report import COLORS, build, to_html, to_markdown
from ts2export.rule import Applicability, Finding

MANUAL = 'import torch\n\ncu = torch.jit.CompilationUnit("def f(x):\\n    return x\\n")\n'


def report_repo(tmp_path: Path, run_cli) -> Path:
    """Baseline of 5 findings; then one fixed (gone), one new, and one left for a person."""
    repo = sample_repo(tmp_path)
    assert run_cli("baseline", "--no-progress", ".", cwd=repo)[0] == 0
    commit(repo, "baseline")
    (repo / "tools" / "serve.py").write_text((repo / "tools" / "serve.py").read_text().replace(
        'torch.jit.set_fusion_strategy([("STATIC", 2)])\n', ""))
    (repo / "pkg" / "clean.py").write_text(CLEAN + "\n\ndef trace(m: torch.nn.Module, x):\n    return torch.jit.trace(m, x)\n")
    (repo / "lib").mkdir()
    (repo / "lib" / "knobs.py").write_text(MANUAL)
    return repo


def test_held_back_findings_show_their_reason_and_unit(tmp_path):
    path = tmp_path / "pkg" / "a.py"
    path.parent.mkdir()
    path.write_text("import torch\nm = torch.jit.load('m.pt')\nt = torch.jit.trace(f, x)\n")
    held = Finding("TSX304", str(path), 2, 5, "`torch.jit.load(...)` reads TorchScript", Applicability.UNSAFE, 2, 26)
    held.held = "its writer pkg/w.py:3 stays TorchScript"  # what the program model sets
    held.unit = "artifact m.pt"
    fixable = Finding("TSX301", str(path), 3, 5, "`torch.jit.trace(...)` is deprecated", Applicability.UNSAFE, 3, 26)
    results = [FileResult(str(path), findings=[held, fixable])]
    data = build("sample", results, fingerprint_findings([held, fixable], tmp_path))
    assert [(i.rule, i.category) for i in data.items] == [("TSX304", "held"), ("TSX301", "unsafe")]
    page = to_html(data)
    assert "held back:</b> its writer pkg/w.py:3 stays TorchScript" in page and "<th>unit</th>" in page
    assert "artifact m.pt" in page
    md = to_markdown(data)
    assert "| `pkg/a.py:2` | `TSX304` | held back: its writer pkg/w.py:3 stays TorchScript | artifact m.pt |" in md
    assert "\"held back (it would break code that stays TorchScript)\" : 1" in md


def test_markdown_report_for_a_pull_request(tmp_path, run_cli):
    repo = report_repo(tmp_path, run_cli)
    code, out, err = run_cli("report", "--no-progress", "--format", "markdown", ".", cwd=repo)
    assert code == 0, err
    assert out.startswith("## TorchScript migration report\n")
    assert "**6 findings left** in 4 of 4 files · 1 fixable by `ts2export apply` · 4 more with `--unsafe-fixes` · 1 held back" in out
    assert "**Progress against the baseline** (`ts2export-baseline.json`)" in out
    assert "**20%** fixed (1 of 5); 4 left, **2 new**." in out
    assert "```mermaid\npie showData title" in out
    assert re.search(r"^\| `lib` \| \*\*1\*\* \| 0 \| 0 \| 0 \| 1 \| 0 \|", out, re.M)  # new folder: 0 in the baseline
    assert re.search(r"^\| `pkg` \| \*\*4\*\* \|", out, re.M)
    assert "| `lib/knobs.py:3` 🆕 | `TSX701` | `torch.jit.CompilationUnit(...)` compiles TorchScript" in out
    assert "### Per rule" in out


def test_html_report_is_one_self_contained_file(tmp_path, run_cli):
    repo = report_repo(tmp_path, run_cli)
    code, out, err = run_cli("report", "--no-progress", "-o", "report.html", ".", cwd=repo)
    assert code == 0, err
    page = (repo / "report.html").read_text()
    for chart in ("chart-progress", "chart-categories", "chart-folders", "chart-rules"):
        assert f'<svg id="{chart}"' in page
    lowered = page.lower()
    assert "<script" not in lowered and "@import" not in lowered
    assert not re.search(r"""(src|href)\s*=\s*["']?(https?:)?//""", lowered) and "url(" not in lowered
    code, out, err = run_cli("report", "--baseline", "missing.json", ".", cwd=repo)
    assert code == 2 and err.startswith("error: missing.json: no such baseline file")


def find_chromium() -> str | None:
    for name in (os.environ.get("TS2EXPORT_CHROMIUM"), "chromium", "chromium-browser", "google-chrome", "chrome"):
        if name and shutil.which(name):
            return shutil.which(name)
    return None


CHROMIUM_FLAGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
                  "--disable-background-networking", "--disable-component-update", "--disable-sync",
                  "--hide-scrollbars", "--mute-audio"]


@pytest.mark.slow
def run_chromium(chromium: str, profiles: Path, page: Path, *args: str) -> subprocess.CompletedProcess:
    """Headless chromium on ``page`` with a fresh profile under ``profiles``."""
    profile = profiles / f"profile-{len(list(profiles.glob('profile-*')))}"
    return subprocess.run([chromium, *CHROMIUM_FLAGS, f"--user-data-dir={profile}", *args, page.as_uri()],
                          capture_output=True, text=True, timeout=120)


def test_html_report_renders_in_headless_chromium(tmp_path, run_cli, artifact_dir):
    chromium = find_chromium()
    if chromium is None:  # .ci/run installs Debian's chromium; only a machine without it skips
        pytest.skip("chromium is not installed (apt-get install chromium)")
    repo = report_repo(tmp_path / "repo", run_cli)
    report = artifact_dir / "report.html"
    assert run_cli("report", "--no-progress", "-o", report, ".", cwd=repo)[0] == 0

    def chrome(*args: str) -> subprocess.CompletedProcess:
        return run_chromium(chromium, tmp_path, report, *args)

    # The DOM after rendering holds the four charts with their bars and slices.
    dom = chrome("--dump-dom")
    assert dom.returncode == 0, dom.stderr[-2000:]
    for chart in ("chart-progress", "chart-categories", "chart-folders", "chart-rules"):
        assert re.search(rf'<svg id="{chart}"', dom.stdout), chart
    assert len(re.findall(r'<rect class="bar seg-', dom.stdout)) >= 12
    assert len(re.findall(r'class="slice seg-', dom.stdout)) >= 2

    # The screenshot shows them: each series colour covers a visible area.
    shot = artifact_dir / "report.png"
    run = chrome("--window-size=1200,2400", f"--screenshot={shot}")
    assert run.returncode == 0 and shot.is_file(), run.stderr[-2000:]
    print(f"report screenshot: {shot}")
    from PIL import Image

    with Image.open(shot) as image:
        assert image.size == (1200, 2400)
        colours = image.convert("RGB").getcolors(maxcolors=1 << 20)
    counts = {rgb: n for n, rgb in colours}
    for series in ("safe", "unsafe", "manual", "fixed", "remaining", "new"):
        rgb = tuple(int(COLORS[series][i:i + 2], 16) for i in (1, 3, 5))
        assert counts.get(rgb, 0) >= 300, f"{series} ({COLORS[series]}) barely drawn: {counts.get(rgb, 0)} pixels"
    assert len(counts) > 50  # text, anti-aliasing: a rendered page, not a blank one
