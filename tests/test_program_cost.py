"""The program model's cost grows with the code, not with the paths through it.

A public model zoo (300 files) and a chemistry library did not finish: the model followed values
through helpers called from many places, names scripted again and again, and star imports, once
per path. Each test here builds a program whose paths multiply with its size (by 2**6 or more
when the size doubles) and checks that the work (Python function calls while the model is built
and asked for its views, counted exactly) grows with the code: at most as the square of its size
(a name bound n times has n*n pairs of a binding and a use)."""

from __future__ import annotations

import sys
import textwrap

import pytest

from ts2export.model.program import Program


def _work(files: dict[str, str]) -> int:
    """Python function calls made while building the model of ``files`` and its views."""
    sources = {path: textwrap.dedent(code).encode() for path, code in files.items()}
    calls = 0

    def count(frame, event, arg):
        nonlocal calls
        if event == "call":
            calls += 1

    sys.setprofile(count)
    try:
        program = Program(sources)
        program.views()
    finally:
        sys.setprofile(None)
    assert program.sites.all, "the program has TorchScript sites"
    return calls


def helper_chain(callers: int, depth: int = 8) -> dict[str, str]:
    """A save helper whose path and module are parameters, called from ``callers`` places in each of
    ``depth`` layers of helpers: ``callers ** depth`` paths lead from the save to a value."""
    lines = ["import torch", "", "def save0(m, p):", "    torch.jit.save(m, p)", ""]
    for level in range(1, depth + 1):
        lines.append(f"def save{level}(m, p):")
        lines += [f"    save{level - 1}(m, p + '_{j}')" for j in range(callers)]
        lines.append("")
    lines.append(f"save{depth}(torch.jit.script(torch.nn.Linear(2, 2)), 'model')")
    return {"chain.py": "\n".join(lines) + "\n"}


def rescripted(times: int) -> dict[str, str]:
    """A test that scripts the model a factory made, again and again under one name (as a model
    zoo's tests do), then calls it."""
    body = "\n".join("    model = torch.jit.script(model)" for _ in range(times))
    return {
        "zoo.py": "import torch\n\n\ndef create_model(name):\n    return torch.nn.Linear(4, 4)\n",
        "test_zoo.py": f"import torch\nfrom zoo import create_model\n\n\ndef test_forward(name):\n"
                       f"    model = create_model(name)\n{body}\n    model(torch.randn(2, 4))\n",
    }


def star_imports(modules: int) -> dict[str, str]:
    """A package whose ``__init__`` star-imports every module, each of which star-imports the
    package back (as registries of model families do)."""
    files = {"zoo/__init__.py": "".join(f"from .m{i} import *\n" for i in range(modules))}
    for i in range(modules):
        files[f"zoo/m{i}.py"] = f"from zoo import *\n\n\ndef build{i}():\n    return None\n"
    files["main.py"] = ("import torch\nimport zoo\n\n"
                        + "".join(f"a{i} = torch.jit.script(zoo.build{i}())\n" for i in range(modules)))
    return files


def factories(width: int, depth: int = 6) -> dict[str, str]:
    """Factories that return other factories' results, ``width`` returns each: the object scripted
    at the end comes from ``width ** depth`` paths."""
    lines = ["import torch", "", "def make0(kind):", "    return torch.nn.Linear(2, 2)", ""]
    for level in range(1, depth + 1):
        lines.append(f"def make{level}(kind):")
        for j in range(width):
            lines.append(f"    if kind == {j}:")
            lines.append(f"        return make{level - 1}(kind)")
        lines.append(f"    return make{level - 1}(kind)")
        lines.append("")
    lines.append(f"m = torch.jit.script(make{depth}(1))")
    return {"factory.py": "\n".join(lines) + "\n"}


@pytest.mark.parametrize("build", [helper_chain, rescripted, star_imports, factories])
def test_work_grows_with_the_code_not_with_the_paths(build):
    small, large = (3, 6) if build is not star_imports else (8, 16)
    work_small, work_large = _work(build(small)), _work(build(large))
    # the code doubles, the paths grow by 2**6 or more: the work grows by at most about 2**2
    assert work_large < 6 * work_small, (work_small, work_large)
