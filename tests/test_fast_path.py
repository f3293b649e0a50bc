"""The fast path gives what the full path gives.

The fast path (the default) computes libcst metadata only when a rule first asks for it, asks
scope analysis only about names that could match what a rule looks for, and parses with ``ast``
only the files that can hold a TorchScript site (the others when a question needs them). The full
path (``TS2EXPORT_FULL_METADATA=1``) resolves every provider before each visit and asks about every
name. Checked here: the same report (findings, held-back reasons, units, errors, notes, diffs)
over every corpus case and over real files of the installed torch package; the name screen never
rejects a name libcst gives a node, over the same files; the program model finds the same sites
when every file is parsed up front.
"""

from __future__ import annotations

import shutil
from dataclasses import replace
from pathlib import Path

import libcst as cst
import pytest
import torch
from libcst.metadata import MetadataWrapper, QualifiedNameProvider

from ts2export.engine import analyze
from ts2export.model.program import Program
from ts2export.model.sites import Sites
from ts2export.rule import ProgramView, Rule, RuleContext

from tests.test_cache import CORPUS, configured, report

TORCH = Path(torch.__file__).parent
# Real files with TorchScript in them (scripted functions, overloads, is_scripting, annotate, Final,
# tracing state), with the modules and helpers they import: copied together, they form a small tree.
REAL = [
    "nn/utils/rnn.py", "nn/functional.py", "nn/modules/activation.py", "nn/modules/rnn.py",
    "nn/modules/transformer.py", "nn/modules/module.py", "nn/modules/linear.py", "nn/init.py",
    "jit/_shape_functions.py", "jit/_recursive.py", "distributions/utils.py", "_jit_internal.py",
]


def real_tree(root: Path) -> Path:
    for rel in REAL:
        dest = root / "torch" / rel
        dest.parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(TORCH / rel, dest)
    return root / "torch"


def both_paths(path: Path, unsafe: bool, monkeypatch) -> tuple[dict, dict]:
    tasks, options = configured(path, unsafe)
    options = replace(options, fix="unsafe" if unsafe else "safe")
    fast = report(analyze(tasks, options, 1))
    monkeypatch.setenv("TS2EXPORT_FULL_METADATA", "1")
    full = report(analyze(tasks, options, 1))
    monkeypatch.delenv("TS2EXPORT_FULL_METADATA")
    return fast, full


@pytest.mark.slow
@pytest.mark.parametrize("case", CORPUS, ids=lambda p: "/".join(p.parts[-3:-1]))
def test_corpus_the_fast_path_gives_what_the_full_path_gives(case, monkeypatch):
    for unsafe in (False, True):
        fast, full = both_paths(case, unsafe, monkeypatch)
        assert fast == full


@pytest.mark.slow
def test_real_files_the_fast_path_gives_what_the_full_path_gives(tmp_path, monkeypatch):
    tree = real_tree(tmp_path)
    fast, full = both_paths(tree, True, monkeypatch)
    assert fast["findings"], "the real files have TorchScript findings"
    assert fast == full


def _sources() -> list[Path]:
    corpus = sorted(p for case in CORPUS for p in case.rglob("*.py"))
    return corpus + [TORCH / rel for rel in REAL]


# The three tests that compare the engine's answers with libcst's providers over the same files
# share each file's parse and each provider's run (scope analysis, parents): one worker runs them.
_REFERENCE: dict[Path, tuple[cst.Module, MetadataWrapper]] = {}
LIBCST_REFERENCE = pytest.mark.xdist_group("libcst_reference")


def reference(path: Path) -> tuple[cst.Module, MetadataWrapper]:
    """``path`` parsed by libcst, and a wrapper of it that runs each provider once (libcst keeps
    what ``resolve`` computed)."""
    if path not in _REFERENCE:
        module = cst.parse_module(path.read_bytes())
        _REFERENCE[path] = module, MetadataWrapper(module, unsafe_skip_copy=True)
    return _REFERENCE[path]


@LIBCST_REFERENCE
def test_the_name_screen_never_rejects_a_name_libcst_gives():
    """For every name and attribute of the corpus and the real files, each qualified name libcst
    gives it (and each dotted prefix of it) passes the screen that spares scope analysis; and the
    screen does reject names."""
    checked = rejected = 0
    for path in _sources():
        module, wrapper = reference(path)
        names = wrapper.resolve(QualifiedNameProvider)
        rule = Rule(RuleContext(path=str(path), source=module.code, program=ProgramView()))
        for node, qualified in names.items():
            if not isinstance(node, (cst.Name, cst.Attribute, cst.Subscript)):
                continue
            qualified = qualified() if callable(qualified) else qualified
            for q in (q.name for q in qualified):
                parts = q.split(".")
                assert rule.may_be_named(node, (q,)), (str(path), q, cst.Module([]).code_for_node(node))
                for cut in range(1, len(parts) + 1):
                    assert rule.may_be_named(node, (".".join(parts[:cut]),), prefix=True), (str(path), q, cut)
                checked += 1
            rejected += not rule.may_be_named(node, ("torch.jit.script",))
    assert checked > 10000 and rejected > 10000


def _noting(kind: str, way: str):
    def note(self, node):
        self.log.append((f"{way}_{kind}", node))

    note.__name__ = f"{way}_{kind}"  # libcst finds a visitor's methods by their names
    return note


_KINDS = ("Call", "Name", "Attribute", "FunctionDef", "ClassDef", "Decorator", "IndentedBlock", "Param",
          "SimpleStatementLine", "Subscript", "Comment", "Arg", "If", "For", "With", "Lambda", "ImportFrom")
#: Notes each visit and leave call it gets, for nodes of the kinds the rules visit most.
_Calls = type("_Calls", (cst.BatchableCSTVisitor,), {
    "__init__": lambda self, log: (cst.BatchableCSTVisitor.__init__(self), setattr(self, "log", log))[0],
    **{f"{way}_{kind}": _noting(kind, way) for kind in _KINDS for way in ("visit", "leave")},
})


@LIBCST_REFERENCE
def test_positions_and_parents_are_libcsts():
    """The engine's positions (its own code generator) and the parents its visit records are what
    libcst's PositionProvider and ParentNodeProvider give, node for node, over the corpus and the
    real files."""
    from libcst.metadata import ParentNodeProvider, PositionProvider

    from ts2export.rule.metadata import StatementPositions, all_parents, parent_recorder, positions
    from ts2export.rule.walk import walk_batched

    nodes = 0
    for path in _sources():
        module, wrapper = reference(path)
        expected = wrapper.resolve(PositionProvider)
        fast = positions(module)
        assert fast.keys() == expected.keys() and all(fast[n] == r for n, r in expected.items()), str(path)
        assert fast.code == module.code, str(path)
        # each statement's positions when first asked for, in an order that starts mid-file
        lazy = StatementPositions(module, {**wrapper.resolve(ParentNodeProvider), module: None})
        assert lazy.code == module.code, str(path)
        order = list(expected)
        order = order[len(order) // 2:] + order[:len(order) // 2]
        assert all(n in lazy and lazy[n] == expected[n] for n in order), str(path)
        assert lazy.get(cst.Name("elsewhere")) is None and cst.Name("elsewhere") not in lazy
        parents: dict = {}
        enter, leave = parent_recorder(parents)
        wrapper.visit_batched([], before_visit=enter, after_leave=leave)
        libcst_parents = wrapper.resolve(ParentNodeProvider)
        walked = all_parents(module, {})
        # the engine's walk calls what libcst's visit calls, in the same order
        calls: list[list] = [[], []]
        for log, visit in zip(calls, (cst.visit_batched, walk_batched)):
            visit(module, [_Calls(log)], before_visit=lambda n, log=log: log.append(("enter", n)),
                  after_leave=lambda n, log=log: log.append(("after", n)))
        assert len(calls[0]) == len(calls[1]) and all(a[0] == b[0] and a[1] is b[1] for a, b in zip(*calls)), str(path)
        for table in (parents, walked):
            assert table.pop(module) is None
            assert table.keys() == libcst_parents.keys(), str(path)
            assert all(table[n] is p for n, p in libcst_parents.items()), str(path)
        nodes += len(expected)
    assert nodes > 100000


def test_the_program_model_finds_the_same_sites_parsing_every_file_up_front(tmp_path, monkeypatch):
    tree = real_tree(tmp_path)
    sources = {str(p): p.read_bytes() for p in [*tree.rglob("*.py"), *(q for c in CORPUS for q in c.rglob("*.py"))]}

    def sites(program: Program) -> list[tuple]:
        return sorted((s.kind, s.file.path, s.start, s.end, s.api, s.scope) for s in program.sites.all)

    screened = Program(sources)
    assert len(screened.files.parsed) < len(sources)  # some files were not parsed up front
    monkeypatch.setattr(Sites, "_may_hold_sites", lambda self, path, data: True)
    everything = Program(sources)
    assert sites(screened) == sites(everything)
    assert sites(screened)


@LIBCST_REFERENCE
def test_names_read_from_the_imports_are_the_names_libcst_gives(tmp_path):
    """Every qualified name the rules get from the file's import statements (without scope
    analysis, ts2export.rule.imported), and the empty answer for expressions libcst names nothing
    (`int | None`), is what libcst's scope analysis gives the same node (of any kind), over
    the corpus, the real files and a file written to meet the edge cases (dotted imports, a name
    used before its import, a name also bound locally, relative and aliased imports)."""
    from libcst.metadata import ParentNodeProvider, ScopeProvider

    from ts2export.rule.base import _import_statement_nodes

    edges = tmp_path / "edges.py"
    edges.write_text(
        "early = torch.jit.script\nearly_nn = nn\nimport torch\nimport torch.nn, os.path as osp\nimport a.b.c\n"
        "from torch import jit as j, nn\nfrom . import sibling\nfrom ..pkg.mod import thing as t\n"
        "from typing import List, Optional\nx: Optional[torch.Tensor] = None\ntry:\n    from torch.jit import script\nexcept ImportError:\n    script = None\n"
        "if True: import torchvision\n"
        "script2 = j.script\n\n\nclass Net(nn.Module, torch.nn.Module):\n    x: List[int]\n    m = nn.Linear\n\n"
        "    @j.export\n    def forward(self, x, nn=None):\n        y = torch.nn.functional.relu(x)\n"
        "        a.b.c.d(a.b, a, osp.join, sibling.f, t, torchvision.models)\n        return j.script(y) + nn\n\n\n"
        "def local():\n    import numpy as np\n    return np.zeros(1), torch.jit.trace, a.b.c, osp\n"
        "\n\nlambda: torch.jit.script\n[torch.jit for torch in range(2)]\n"
    )
    header = tmp_path / "header.py"
    header.write_text(
        '"""A module whose imports all come first."""\nfrom __future__ import annotations\nimport torch\n'
        "from torch import nn, Tensor\nimport torch.nn.functional as F\n\nlayer = nn.Linear\nhint: Tensor = Tensor\n"
        "print(len, int.from_bytes, __name__, undefined_thing, F.relu, nn)\nearly_nn = nn\nimport os\nlate = os.path\n"
        "before = dataclass\nif os: from dataclasses import dataclass; same = dataclass\n\n\n@dataclass\nclass After:\n"
        "    x: int = 0\n\n\nafter = dataclass; os2 = os\nfrom torch.nn import functional\nfrom .. import sibling\n"
        "try:\n    import numpy\nexcept ImportError:\n    numpy = None\nafter_np = numpy\n"
    )
    answered = 0
    for path in [*_sources(), edges, header]:
        module, wrapper = reference(path)
        scopes = wrapper.resolve(ScopeProvider)
        parents = dict(wrapper.resolve(ParentNodeProvider))
        parents[module] = None
        context = RuleContext(path=str(path), source=module.code, program=ProgramView(), parents=parents,
                              parents_complete=True)
        rule = Rule(context)
        rule._wrapper = wrapper
        in_imports = _import_statement_nodes(module)
        for node in parents:  # with the import statements' nodes, which scope analysis names nothing (no scope)
            scope = scopes.get(node)
            if isinstance(node, cst.Call) or (scope is None and id(node) not in in_imports):
                continue
            quick = rule._imported_qualnames(node)
            if quick is None:
                continue
            expected = {q.name for q in scope.get_qualified_names_for(node)} if scope is not None else set()
            assert quick == expected, (str(path), cst.Module([]).code_for_node(node), quick, expected)
            answered += 1
    assert answered > 4000, answered
    print(f"{answered} names answered from the imports")
