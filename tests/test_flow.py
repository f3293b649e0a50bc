"""Which assignments of a name reach a use (ts2export.model.flow), and what it lets the program
model follow: a helper that rebinds its module in each branch, classes from a package folder
without an __init__.py."""

from __future__ import annotations

import textwrap

from ts2export.model.program import Program
from ts2export.model.sites import ENTRY_SCRIPT


def test_a_name_rebound_in_other_branches_is_followed_to_the_values_that_reach_each_use(tmp_path, monkeypatch):
    """A test helper that compiles its module one way per mode (cuequivariance-torch's
    `module_with_mode`): `module` is rebound in each branch, but only the parameter reaches the
    `torch.jit.script(module)` of its own branch, so the script compiles exactly what the tests
    pass; the classes come from a package folder without an __init__.py (a namespace portion of
    the package, named `kit.ops.linear` as Python names it)."""
    kit = tmp_path / "kit"
    (kit / "ops").mkdir(parents=True)
    (tmp_path / "tests").mkdir()
    files = {
        "kit/__init__.py": "from .ops.linear import Linear\nfrom .ops.gate import Gate\n",
        "kit/ops/linear.py": "import torch\n\n\nclass Linear(torch.nn.Module):\n    def forward(self, x):\n        return x * 2\n",
        "kit/ops/gate.py": "import torch\n\n\nclass Gate(torch.nn.Module):\n    def forward(self, x):\n        return x.relu()\n",
        "kit/unused.py": "import torch\n\n\nclass Unused(torch.nn.Module):\n    def forward(self, x):\n        return x\n",
        "tests/helpers.py": """
            import os
            import torch

            def module_with_mode(mode, module, inputs, tmp_path):
                if mode == "compile":
                    module = torch.compile(module, fullgraph=True)
                elif mode == "script":
                    module = torch.jit.script(module)
                    torch.jit.save(module, os.path.join(tmp_path, "m.ts"))
                    module = torch.jit.load(os.path.join(tmp_path, "m.ts"))
                elif mode == "jit":
                    module = torch.jit.trace(module, inputs)
                return module

            def looped(modules):
                for m in modules:
                    if m is None:
                        module = m
                    else:
                        module = torch.jit.script(module)
            """,
        "tests/test_ops.py": """
            import torch
            import kit
            from helpers import module_with_mode

            def test_linear(tmp_path):
                m = kit.Linear()
                m = module_with_mode("script", m, [torch.ones(2)], tmp_path)

            def test_gate(tmp_path):
                module_with_mode("jit", kit.Gate(), [torch.ones(2)], tmp_path)
            """,
    }
    for rel, text in files.items():
        (tmp_path / rel).write_text(textwrap.dedent(text))
    monkeypatch.chdir(tmp_path)
    program = Program({rel: (tmp_path / rel).read_bytes() for rel in files})
    assert program.files.module_names["kit/ops/linear.py"] == "kit.ops.linear"
    assert program.files.module_names["tests/helpers.py"] == "helpers"  # no package above it
    scripts = {(s.scope, s.text): s for s in program.sites.all if s.kind == ENTRY_SCRIPT}
    defs, unknown = program.reach.reach(scripts[("module_with_mode", "torch.jit.script(module)")])
    assert not unknown
    assert {d for d in defs if d[1] in ("Linear", "Gate", "Unused")} == {("kit/ops/linear.py", "Linear"), ("kit/ops/gate.py", "Gate")}
    # inside a loop, the other branch's value reaches the next iteration's use
    _, unknown = program.reach.reach(scripts[("looped", "torch.jit.script(module)")])
    assert unknown


def test_which_assignments_reach_a_use():
    """ts2export.model.flow on its own: branches, order, loops, a plain assignment that kills, and
    uses that may run later (a lambda)."""
    import ast

    from ts2export.model.flow import Blocks, reaches

    fn = ast.parse(textwrap.dedent("""
        def f(m, flag):
            use(m)
            if flag:
                m = A()
                use(m)
            else:
                m = B()
            use(m)
            m = C()
            use(m)
            while flag:
                use(m)
                m = D()
            later = lambda: m
            try:
                m = E()
            except ValueError:
                use(m)
        """)).body[0]
    blocks = Blocks(fn.body)
    values = [n.value for n in ast.walk(fn) if isinstance(n, ast.Assign) and n.targets[0].id == "m"]
    names = {v.func.id: v for v in values}
    uses = sorted((n for n in ast.walk(fn) if isinstance(n, ast.Name) and n.id == "m" and isinstance(n.ctx, ast.Load)),
                  key=lambda n: (n.lineno, n.col_offset))

    def reaching(use):
        got = {name for name, v in names.items() if reaches(blocks, v, use, values)}
        return got | ({"param"} if reaches(blocks, None, use, values) else set())

    assert reaching(uses[0]) == {"param"}
    assert reaching(uses[1]) == {"A"}  # killed the parameter in its block; B is the other branch
    assert reaching(uses[2]) == {"param", "A", "B"}  # (a branch's assignment does not kill outside it)
    assert reaching(uses[3]) == {"C"}
    assert reaching(uses[4]) == {"C", "D"}  # the loop brings D round
    assert reaching(uses[5]) == {"param", "A", "B", "C", "D", "E"}  # a lambda may run at any time
    assert reaching(uses[6]) == {"C", "D", "E"}  # E may have run before the exception
