"""Coverage (issue 21): one entry point whose target cannot be followed holds back only what it
must, says so in one line, and can be let through by a documented option; `scan` counts what
`apply --unsafe-fixes` writes, not what it would write were nothing held back."""

from __future__ import annotations

import json
import textwrap
from pathlib import Path

ZOO = """
    import torch
    from torch import nn

    _REGISTRY = {}

    def create_model(name):
        return _REGISTRY[name]()

    class Net(nn.Module):
        def __init__(self):
            super().__init__()
            self.lin = nn.Linear(4, 4)

        @torch.jit.unused
        def describe(self) -> str:
            return "net"

        def forward(self, x):
            while x.abs().sum() > 100:
                x = x / 2
            return self.lin(x)

    _REGISTRY["net"] = Net
    """

CHECK = """
    import torch
    from zoo import create_model

    def check(name, batch_size=2):
        model = create_model(name).eval()
        scripted = torch.jit.script(model)
        x = torch.randn((batch_size, 4))
        return scripted(x)
    """


# the scripted model is returned with its output, to callers that may keep it: it cannot run eager
# (kept in a cache instead, `_CACHE[name] = scripted`, it would be handed on where ts2export cannot
# follow it, and stay TorchScript for that reason: docs/callsites.md)
KEPT = CHECK.replace("        return scripted(x)", "        return scripted, scripted(x)")


def _tree(tmp_path: Path, config: str = "", check: str = KEPT) -> Path:
    (tmp_path / "zoo.py").write_text(textwrap.dedent(ZOO))
    (tmp_path / "check.py").write_text(textwrap.dedent(check))
    if config:
        (tmp_path / "pyproject.toml").write_text(config)
    return tmp_path


def test_an_unfollowable_entry_point_is_held_by_the_blocker_it_may_export_and_named_in_one_line(tmp_path, run_cli):
    tree = _tree(tmp_path)
    code, out, _err = run_cli("scan", "--unsafe-fixes", "--no-cache", ".", cwd=tree)
    # the data-dependent loop of Net.forward has no fix: exporting whatever create_model returns may stop there
    assert "its target cannot be followed, so it may export any code of the run" in out
    assert "TSX402 in `Net.forward`" in out
    assert ("1 fix held back behind `torch.jit.script(model)` at check.py:7, which stays (its target cannot be "
            "followed: migrate it by hand, or set `migrate-unfollowable = true`") in out


def test_an_unfollowable_entry_point_only_called_where_it_was_made_runs_eager_and_releases_the_rest(tmp_path, run_cli):
    tree = _tree(tmp_path, check=CHECK)
    code, out, _err = run_cli("apply", "--unsafe-fixes", ".", cwd=tree)
    check = (tree / "check.py").read_text()
    assert "    scripted = model\n" in check and "the module runs eager" in check, check
    assert "@torch.jit.unused" not in (tree / "zoo.py").read_text()  # nothing compiles it any more
    code, out, _err = run_cli("scan", "--no-cache", "--format", "json", ".", cwd=tmp_path)
    assert not [f for f in json.loads(out)["findings"] if f["rule"] == "TSX302"]


def test_scan_counts_what_apply_unsafe_fixes_writes(tmp_path, run_cli):
    tree = _tree(tmp_path)
    code, out, _err = run_cli("scan", "--no-cache", "--format", "json", ".", cwd=tree)
    data = json.loads(out)
    assert data["summary"]["fixable_unsafe"] == 0  # the script call is held in that mode
    script = next(f for f in data["findings"] if f["rule"] == "TSX302")
    assert script["held_back"].startswith("with --unsafe-fixes: its target cannot be followed")
    code, out, _err = run_cli("apply", "--unsafe-fixes", ".", cwd=tree)
    assert "Fixed 0 findings" in out
    assert "torch.jit.script(model)" in (tree / "check.py").read_text()


def test_migrate_unfollowable_lets_the_entry_point_and_the_rest_migrate(tmp_path, run_cli):
    tree = _tree(tmp_path, "[tool.ts2export]\nmigrate-unfollowable = true\n")
    code, out, _err = run_cli("scan", "--no-cache", "--format", "json", ".", cwd=tree)
    assert json.loads(out)["summary"]["fixable_unsafe"] == 1
    code, out, _err = run_cli("apply", "--unsafe-fixes", ".", cwd=tree)
    assert code in (0, 1), out
    check = (tree / "check.py").read_text()
    assert "torch.export.export(model, (torch.ones((batch_size, 4)),)" in check
    assert "@torch.jit.unused" not in (tree / "zoo.py").read_text()


BATCH_ONE = """
    import torch
    from torch import nn

    def export(path):
        model = nn.Sequential(nn.Linear(4, 2)).eval()
        traced = torch.jit.trace(model, torch.zeros(1, 4))
        traced.save(path)
    """


def test_batch_one_is_dynamic_by_default_static_or_held_on_request(tmp_path, run_cli):
    def diff(config: str) -> tuple[int, str]:
        folder = tmp_path / (config.split('"')[1] if config else "default")
        folder.mkdir()
        (folder / "export.py").write_text(textwrap.dedent(BATCH_ONE))
        if config:
            (folder / "pyproject.toml").write_text("[tool.ts2export]\n" + config + "\n")
        code, out, _err = run_cli("diff", "--unsafe-fixes", "--no-cache", ".", cwd=folder)
        return code, out

    _code, out = diff("")
    assert "torch.export.export(model, (torch.cat([torch.zeros(1, 4)] * 2),), dynamic_shapes=({0: Dim.DYNAMIC, 1: Dim.AUTO},))" in out
    assert "# ts2export: the example doubled along its batch dim" in out
    _code, out = diff('batch-one = "static"')
    assert "torch.export.export(model, (torch.zeros(1, 4),), dynamic_shapes=({1: Dim.AUTO},))" in out
    _code, out = diff('batch-one = "hold"')
    assert "torch.export" not in out
    (tmp_path / "bad").mkdir()
    (tmp_path / "bad" / "pyproject.toml").write_text('[tool.ts2export]\nbatch-one = "sometimes"\n')
    code, out, err = run_cli("scan", ".", cwd=tmp_path / "bad")
    assert code == 2 and 'batch-one must be one of "dynamic", "static", "hold"' in (out + err)


SERVE = """
    import torch
    from zoo import create_model

    def serve(name, loader):
        model = torch.jit.script(create_model(name))
        return [model(batch) for batch in loader]
    """


def test_a_staying_unfollowable_entry_point_holds_the_rest_unless_told_otherwise(tmp_path, run_cli):
    for folder, config in (("default", ""), ("told", "[tool.ts2export]\nmigrate-unfollowable = true\n")):
        tree = tmp_path / folder
        tree.mkdir()
        (tree / "zoo.py").write_text(textwrap.dedent(ZOO))
        (tree / "serve.py").write_text(textwrap.dedent(SERVE))
        if config:
            (tree / "pyproject.toml").write_text(config)
        code, out, _err = run_cli("scan", "--no-cache", "--format", "json", ".", cwd=tree)
        unused = next(f for f in json.loads(out)["findings"] if f["rule"] == "TSX101")
        if config:  # the script call has no inputs and stays; the decorator it might compile may go
            assert unused["held_back"] is None
        else:
            assert "whose target ts2export cannot follow" in unused["held_back"]
