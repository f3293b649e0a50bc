"""The fix pass's import management skips libcst's work where it cannot change the module: scope
analysis of the new module when every import that was used is surely still used
(``_still_referenced``), and ``AddImportsVisitor`` when every import a fix needs is already at the
top of the module (``_nothing_to_add``). Each case here is fixed twice, with the screens and with
libcst asked every time (what the full path does), and must give the same code; the screens must
also be taken where they are meant to be (else they spare nothing)."""

from __future__ import annotations

import libcst as cst
import pytest
from libcst.metadata import MetadataWrapper

from ts2export.engine import fixes
from ts2export.rule import Fix, Import


class _Call(cst.CSTVisitor):
    """The first call whose callee's code is ``callee``."""

    def __init__(self, module: cst.Module, callee: str) -> None:
        self.module, self.callee, self.found = module, callee, None

    def visit_Call(self, node: cst.Call) -> None:
        if self.found is None and self.module.code_for_node(node.func) == self.callee:
            self.found = node


def fixed(source: str, callee: str, replacement: str, imports: tuple = (), *, screens: bool, monkeypatch) -> str:
    """``source`` with the first call of ``callee`` replaced by ``replacement`` (an expression),
    through the fix pass's import management."""
    if not screens:
        monkeypatch.setenv("TS2EXPORT_FULL_METADATA", "1")
    module = cst.parse_module(source)
    wrapper = MetadataWrapper(module, unsafe_skip_copy=True)
    usage = fixes._import_bindings(wrapper)
    finder = _Call(module, callee)
    module.visit(finder)
    assert finder.found is not None, callee
    new = module.visit(fixes._ApplyEdits({id(finder.found): cst.parse_expression(replacement)}))
    fix = Fix(edits=(), imports=tuple(Import(*i) for i in imports))
    out = fixes._manage_imports(usage, new, [fix], {})
    monkeypatch.delenv("TS2EXPORT_FULL_METADATA", raising=False)
    return out.code


CASES = {
    # the fix leaves torch used elsewhere: nothing to remove, and the screen knows it
    "still used": ("import torch\nimport os\n\nx = torch.jit.annotate(int, 3)\ny = torch.ones(1)\n",
                   "torch.jit.annotate", "3", (), True),
    # the fix removes the last use of `os`: removed
    "last use": ("import os\nimport torch\n\nx = os.getcwd()\ny = torch.ones(1)\n", "os.getcwd", "'.'", (), False),
    # `torch` is also a parameter's name: the screen cannot tell, libcst decides
    "shadowed": ("import torch\n\ndef f(torch):\n    return torch\n\nx = torch.jit.annotate(int, 3)\n",
                 "torch.jit.annotate", "3", (), False),
    # a dotted import binds two names: libcst decides
    "dotted": ("import torch.nn.functional\n\nx = torch.nn.functional.relu(1)\n", "torch.nn.functional.relu", "1", (), False),
    # an import inside a function: libcst decides
    "local import": ("def f():\n    import os\n    return os.getcwd()\n", "os.getcwd", "'.'", (), False),
    # only a string annotation reads it afterwards: libcst decides (it reads string annotations)
    "string annotation": ("import typing\n\nx: 'typing.Any' = typing.cast(int, 1)\n", "typing.cast", "1", (), False),
}


@pytest.mark.parametrize("name", sorted(CASES))
def test_the_unused_import_screen_changes_nothing(name, monkeypatch):
    source, callee, replacement, imports, screened = CASES[name]
    with_screens = fixed(source, callee, replacement, imports, screens=True, monkeypatch=monkeypatch)
    assert with_screens == fixed(source, callee, replacement, imports, screens=False, monkeypatch=monkeypatch)
    module = cst.parse_module(source)
    usage = fixes._import_bindings(MetadataWrapper(module, unsafe_skip_copy=True))
    finder = _Call(module, callee)
    module.visit(finder)
    new = module.visit(fixes._ApplyEdits({id(finder.found): cst.parse_expression(replacement)}))
    assert fixes._still_referenced(usage, new.code) is screened


ADDS = {
    # `import torch` is there: nothing to add, the visitor is spared
    "present": ("import torch\n\nx = f(1)\n", (("torch", None, None),), True),
    "present from": ("from typing import Optional, cast\n\nx = f(1)\n", (("typing", "cast", None),), True),
    "star": ("from typing import *\n\nx = f(1)\n", (("typing", "cast", None),), True),
    "aliased": ("import numpy as np\n\nx = f(1)\n", (("numpy", None, "np"),), True),
    # missing, or present only under another alias, or below the first statement: the visitor adds it
    "missing": ("import os\n\nx = f(1)\n", (("torch", None, None),), False),
    "other alias": ("import numpy as n\n\nx = f(1)\n", (("numpy", None, "np"),), False),
    "from, another name": ("from typing import Optional\n\nx = f(1)\n", (("typing", "cast", None),), False),
    "below code": ("x = f(1)\nimport torch\n", (("torch", None, None),), False),
    "docstring first": ('"""doc"""\nimport torch\n\nx = f(1)\n', (("torch", None, None),), True),
    # the visitor rewrites the module's leading `from` import and nothing nested
    "nested from": ("from typing import Optional\n\ndef g():\n    from typing import List\n    return f(1)\n\n"
                    "class C:\n    from typing import Dict\n", (("typing", "cast", None), ("torch", None, None)), False),
    "future and docstring": ('"""doc"""\nfrom __future__ import annotations\nimport os\nx = f(1)\n',
                             (("typing", "Final", None), ("__future__", "division", None)), False),
    "after a comment": ("# header\nimport os  # why\n\n\n# section\nx = f(1)\n", (("torch.nn", "functional", "F"),), False),
}


@pytest.mark.parametrize("name", sorted(ADDS))
def test_the_import_adding_screen_changes_nothing(name, monkeypatch):
    source, imports, nothing = ADDS[name]
    with_screens = fixed(source, "f", "g", imports, screens=True, monkeypatch=monkeypatch)
    assert with_screens == fixed(source, "f", "g", imports, screens=False, monkeypatch=monkeypatch)
    from libcst.codemod import CodemodContext
    from libcst.codemod.visitors import AddImportsVisitor

    context = CodemodContext()
    for imp in imports:
        AddImportsVisitor.add_needed_import(context, *imp)
    assert fixes._nothing_to_add(context, cst.parse_module(source)) is nothing
