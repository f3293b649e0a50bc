"""Code quoted into what the tool writes (comments in generated code, messages, held-back reasons)
is one line, carries no comment of its own and stays short, whatever the layout of the original
(issue: a scripted expression over several lines made the eager fallback's comment invalid, and
the whole file went unchecked with an internal error)."""

from __future__ import annotations

import ast

import libcst as cst
import pytest

from ts2export.engine import Options, Task, process_bytes
from ts2export.harness.corpus import run_tree
from ts2export.quoting import QUOTE_LIMIT, comment, inline

# Each TorchScript construct in a position whose code a rule quotes, written over several lines
# with comments inside, the way formatters and people leave long calls.
PROGRAM = '''\
import torch


class Kernel(torch.nn.Module):
    def __init__(self, n: int = 3):
        super().__init__()
        self.n = n

    def forward(self, x):
        if (
            x.sum()  # the total decides
            > 0
        ):
            x = x * self.n
        return x


def eager_fallback(patches):
    # scripted where it is used, with inputs nowhere in sight: the module runs eager, and the
    # comment says what the script call was
    kernel = torch.jit.script(
        Kernel(
            3,  # size
        ).to(patches.device, patches.dtype).eval()
    )
    return kernel(load_patches())


def needs_inputs(path):
    # saved, with no example inputs: TSX302 quotes the module in its hint
    scripted = torch.jit.script(
        Kernel(
            4,  # size
        )
    )
    torch.jit.save(scripted, path)


def unknown_rank(path):
    # the example comes from a call whose result is not visible: held, quoting the example
    traced = torch.jit.trace(
        Kernel(5),
        load_example(
            "batch.pt",  # recorded elsewhere
        ),
    )
    torch.jit.save(
        traced,  # the artifact
        path,
    )


def load_patches():
    return torch.rand(2, 3)


def load_example(name):
    return torch.load(name)
'''

MODES = (None, "safe", "unsafe")


@pytest.mark.parametrize("code,shown", [
    ("torch.jit.script(\n    Kernel(\n        3,  # size\n    ).to(x.device).eval()\n)", "torch.jit.script(Kernel(3).to(x.device).eval())"),
    ("f(a,\n  b,\n)", "f(a, b)"),
    ("(1,\n)", "(1,)"),
    ("x  >  0", "x > 0"),
    ("(\n    x.sum()  # total\n    > 0\n)", "(x.sum() > 0)"),
    ('f("""a\nb""")', 'f("""a b""")'),
    ("f(\n", "f("),  # not code: its lines joined all the same
])
def test_inline_is_one_line_without_comments(code, shown):
    assert inline(code) == shown


def test_inline_is_cut_to_its_limit():
    long = "f(" + ", ".join(f"argument_{i}" for i in range(40)) + ")"
    out = inline(long)
    assert len(out) == QUOTE_LIMIT and out.endswith("...")
    assert inline(long, limit=None) == long


def test_a_comment_is_one_valid_comment_line():
    node = comment("ts2export: `f(\n    x,  # note\n)` ran eager")
    assert node.value == "# ts2export: `f( x,  # note )` ran eager"
    cst.parse_module(f"{node.value}\nx = 1\n")  # libcst validated it: a real comment


def _comments(source: str) -> list[str]:
    return [line.strip() for line in source.splitlines() if line.strip().startswith("#")]


@pytest.mark.parametrize("fix", MODES)
def test_multiline_expressions_in_every_quoted_position(fix):
    res = process_bytes(PROGRAM.encode(), Task("kernel.py", "python"), Options(fix=fix, plan="unsafe"))
    assert res.error is None, res.error
    rules = {f.rule_id for f in res.findings}
    assert {"TSX302", "TSX301", "TSX303"} <= rules, rules
    for f in res.findings:
        for said in (f.message, f.held, f.held_unsafe):
            assert "\n" not in (said or ""), f"{f.rule_id}:{f.line} says over several lines: {said!r}"
            assert "# size" not in (said or "") and "# recorded elsewhere" not in (said or "")
    hints = [f.message for f in res.findings if f.rule_id == "TSX302" and "needs example inputs" in f.message]
    assert any("torch.jit.script(Kernel(4))" in m for m in hints), hints
    if fix is None or res.new is None:
        return
    new = res.new.decode()
    ast.parse(new)
    old_comments = _comments(PROGRAM)
    written = [c for c in _comments(new) if c not in old_comments]
    if fix == "unsafe":
        assert "# Data-dependent branch (was `if (x.sum() > 0):`): torch.cond keeps both branches for torch.export." in written
    again = process_bytes(res.new, Task("kernel.py", "python"), Options(fix=fix, plan="unsafe"))
    assert again.error is None and (again.new is None or again.new == res.new), "a second apply changed more"


@pytest.mark.parametrize("fix", MODES)
def test_multiline_expressions_through_the_program_model(fix):
    """The same file in a run (the program model decides units, holds and eager fallbacks)."""
    files = {"kernel.py": PROGRAM.encode(), "serve.py": b"import torch\n\nm = torch.jit.load(\n    'k.pt',  # x\n)\n"}
    plan = "unsafe" if fix != "safe" else "safe"
    results = run_tree(files, Options(fix=fix, plan=plan))
    for r in results:
        assert r.error is None, f"{r.path}: {r.error}"
        for f in r.findings:
            assert "\n" not in f.message and "\n" not in (f.held or ""), f.message
        if r.changed:
            ast.parse(r.new.decode())
    if fix is not None:  # a second run over the written tree changes nothing (the eager comment included)
        written = {r.path: (r.new if r.changed else files[r.path]) for r in results}
        for r in run_tree(written, Options(fix=fix, plan=plan)):
            assert r.error is None and not r.changed, f"{r.path}: a second apply changed more"
    if fix == "unsafe":
        new = next(r.new for r in results if r.path == "kernel.py").decode()
        eager = [c for c in _comments(new) if "only sped up the calls below" in c]
        assert eager == ["# ts2export: `torch.jit.script(Kernel(3).to(patches.device, patches.dtype).eval())` only "
                         "sped up the calls below; the module runs eager (torch.compile(Kernel(3).to(patches.device, "
                         "patches.dtype).eval()) compiles it again)"], eager
