"""Data-dependent control flow (TSX401/TSX402), proved end to end on corpus/control_flow:

* the original model, compiled with torch.jit.script, branches on tensor values and torch.export
  refuses it;
* the migrated model (the golden after/, which the corpus test proves is what `apply` writes) has no
  torch.jit, exports with a dynamic batch, survives .pt2 save/load and ExecuTorch lowering (XNNPACK
  after run_decompositions), and every one of them computes what the scripted original computes on
  inputs that take each branch, at several batch sizes;
* a loop with a data-dependent trip count is reported and the code still runs.
"""

import ast
import warnings
from pathlib import Path

import pytest

from ts2export.harness.corpus import import_program
from ts2export.engine import Options, Task, process_bytes

torch = pytest.importorskip("torch")

CORPUS = Path(__file__).resolve().parent.parent / "corpus" / "control_flow"
GATE = CORPUS / "cond_gate"


def _load(path: Path, name: str):
    return import_program(path, name)


@pytest.fixture(scope="module")
def gate():
    before = _load(GATE / "before" / "model.py", "control_flow_gate_before")
    after = _load(GATE / "after" / "model.py", "control_flow_gate_after")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DeprecationWarning)
        scripted = torch.jit.script(before.build())
    inputs = before.inputs()
    with torch.no_grad():
        expected = {name: scripted(x) for name, x in inputs.items()}
    return before, after, inputs, expected


def _branches(model, x):
    """Which way each data-dependent `if` of the original goes for input `x`."""
    x = x.mean(1) if x.dim() == 3 else x
    h = model.pos(x) if bool(x.sum() > 0) else model.neg(x)
    return bool(x.sum() > 0), bool(h.abs().max() > 4.0), bool((x < 0).all())


def test_inputs_take_every_branch(gate):
    before, _, inputs, _ = gate
    model = before.build()
    taken = {_branches(model, x) for x in inputs.values()}
    for i in range(3):
        assert {t[i] for t in taken} == {True, False}, f"`if` number {i + 1} takes one side only: {taken}"
    assert {x.shape[0] for x in inputs.values()} == {1, 3, 6}


def test_original_cannot_be_exported(gate):
    before, _, inputs, _ = gate
    with pytest.raises(Exception, match="(?i)data-dependent|guard"):
        torch.export.export(before.build(), (inputs["mixed_3"],), strict=False)


@pytest.mark.parametrize("case", ["cond_gate", "scripted_gate"])
def test_migrated_source_has_no_torchscript(case):
    for path in (CORPUS / case / "after").glob("*.py"):
        tree = ast.parse(path.read_text(encoding="utf-8"))
        jit = [n.lineno for n in ast.walk(tree) if isinstance(n, ast.Attribute) and n.attr == "jit"]
        jit += [n.lineno for n in ast.walk(tree) if isinstance(n, ast.ImportFrom) and "jit" in (n.module or "")]
        assert not jit, f"{path}: torch.jit on lines {jit}"
        res = process_bytes(path.read_bytes(), Task(path.name, "python"), Options())
        assert res.findings == [], [f.message for f in res.findings]
    assert (CORPUS / case / "after" / "model.py").read_text(encoding="utf-8").count("torch.cond(") == 3


def test_migrated_eager_matches_scripted(gate):
    _, after, inputs, expected = gate
    model = after.build()
    with torch.no_grad():
        for name, x in inputs.items():
            torch.testing.assert_close(model(x), expected[name], msg=name)


def _lower(ep, tmp_path, name, share_memory=False):
    from executorch.backends.xnnpack.partition.xnnpack_partitioner import XnnpackPartitioner
    from executorch.exir import ExecutorchBackendConfig, to_edge_transform_and_lower
    from executorch.exir.memory_planning import MemoryPlanningAlgorithmSuite, naive
    from executorch.exir.passes import MemoryPlanningPass
    from executorch.runtime import Runtime

    # A graph with torch.cond must be decomposed before XNNPACK partitioning. ExecuTorch 1.5.1 plans
    # the memory of every cond branch from the same offsets, and a cond's output can stay in its
    # branch's memory: a later cond's branch may overwrite it (wrong results, no error). For the gate
    # model the naive plan happens to keep them apart (the greedy plan does not: see the xfail test);
    # for other models it can be the other way round (notes/control-flow.md).
    config = ExecutorchBackendConfig()
    if not share_memory:
        config = ExecutorchBackendConfig(
            memory_planning_pass=MemoryPlanningPass(memory_planning_algo=MemoryPlanningAlgorithmSuite(algo_list=[naive])))
    edge = to_edge_transform_and_lower(ep.run_decompositions(), partitioner=[XnnpackPartitioner()])
    pte = tmp_path / f"{name}.pte"
    pte.write_bytes(edge.to_executorch(config).buffer)
    return Runtime.get().load_program(pte).load_method("forward")


def _export_dynamic(after, example):
    batch = torch.export.Dim("batch", min=1, max=64)
    return torch.export.export(after.build(), (example,), dynamic_shapes=({0: batch},), strict=False)


@pytest.mark.slow
@pytest.mark.parametrize("rank", [2, 3])
def test_migrated_exports_reloads_and_lowers_with_dynamic_batch(gate, tmp_path, rank):
    _, after, inputs, expected = gate
    mine = {n: x for n, x in inputs.items() if x.dim() == rank}
    ep = _export_dynamic(after, next(x for x in mine.values() if x.shape[0] == 3))
    assert sum("cond" in str(n.target) for n in ep.graph.nodes) == 3, "expected three torch.cond in the graph"
    path = tmp_path / "gate.pt2"
    torch.export.save(ep, path)
    loaded = torch.export.load(path)
    for name, x in mine.items():
        torch.testing.assert_close(loaded.module()(x), expected[name], msg=f"{name} (.pt2)")
    method = _lower(loaded, tmp_path, f"gate{rank}")
    for name, x in mine.items():
        (out,) = method.execute([x])
        torch.testing.assert_close(out, expected[name], msg=f"{name} (.pte)")


@pytest.mark.slow
@pytest.mark.xfail(strict=True, reason="ExecuTorch 1.5.1 gives wrong results for torch.cond in sequence: a later "
                   "branch's planned memory overwrites an earlier cond's output that is still live")
def test_executorch_default_memory_plan_with_sequential_conds(gate, tmp_path):
    _, after, inputs, expected = gate
    method = _lower(_export_dynamic(after, inputs["mixed_3"]), tmp_path, "gate_shared", share_memory=True)
    for name, x in inputs.items():
        if x.dim() == 2:
            (out,) = method.execute([x])
            torch.testing.assert_close(out, expected[name], msg=f"{name} (.pte, greedy memory plan)")


# -- reports -----------------------------------------------------------------------------------


def _check(code: str, fix=None):
    res = process_bytes(code.encode(), Task("m.py", "python"), Options(select=("TSX4",), fix=fix))
    assert res.error is None, res.error
    return res


def test_loop_case_is_reported_and_still_runs():
    case = CORPUS / "loops_and_side_effects"
    code = (case / "before" / "model.py").read_text(encoding="utf-8")
    res = _check(code, fix="unsafe")
    assert not res.changed
    rules = sorted(f.rule_id for f in res.findings)
    assert rules == ["TSX401", "TSX402", "TSX402"], [(f.rule_id, f.message) for f in res.findings]
    module = _load(case / "before" / "model.py", "control_flow_loops")
    model = module.build()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DeprecationWarning)
        scripted = torch.jit.script(module.build())
    for x, steps in module.inputs():
        torch.testing.assert_close(model(x, steps), scripted(x, steps))


_MODEL = "import torch\nfrom typing import Optional\n\n\nclass Net(torch.nn.Module):\n    def forward(self, x{args}):\n{body}"


def _net(body: str, args: str = "") -> str:
    return _MODEL.format(args=args, body="".join("        " + line + "\n" for line in body.splitlines()))


@pytest.mark.parametrize(
    "body,args",
    [
        ("if x.shape[0] > 1:\n    x = x * 2\nreturn x", ""),
        ("if x.size(0) == 2 and x.dim() == 2:\n    x = x * 2\nreturn x", ""),
        ("if x.numel() > 4 or len(x) > 1:\n    x = x * 2\nreturn x", ""),
        ("if mask is None:\n    return x\nreturn x * mask", ", mask: Optional[torch.Tensor] = None"),
        ("if n > 2:\n    x = x * n\nreturn x", ", n: int"),
        ("n = x.shape[-1]\nwhile n > 1:\n    n = n // 2\nreturn x * n", ""),
        ("if self.training:\n    x = x * 2\nreturn x", ""),
        ("for i in range(x.size(0)):\n    x = x + i\nreturn x", ""),
    ],
)
def test_shape_and_python_conditions_are_left_alone(body, args):
    res = _check(_net(body, args), fix="unsafe")
    assert res.findings == [] and not res.changed


@pytest.mark.parametrize(
    "body,reason",
    [
        ("if x.sum() > 0:\n    y = x * 2\nreturn x", "nothing that is used afterwards"),
        ("if x.sum() > 0:\n    y = x * 2\nreturn y", "one branch only"),
        ("if x.sum() > 0:\n    x.mul_(2)\nreturn x", "side effect"),
        ("if x.sum() > 0:\n    x[0] = 1.0\nreturn x", "assigns to `x[0]`"),
        ("if x.sum() > 0:\n    x += 1\nreturn x", "in place"),
        ("y = x * 1\nif x.sum() > 0:\n    y = y.add_(1)\nreturn y", "in-place"),
        ("if x.sum() > 0:\n    y = x * 2\n    if x.mean() > 1:\n        return y\nreturn x", "one branch returns"),
        ("if x.sum() > 0:\n    n = 1\nelse:\n    n = 2\nreturn x * n", "not surely a tensor"),
        ("if x.sum() > 0:\n    return x, x\nreturn x", "different structures"),
        ("if 0 < x.sum() < 1:\n    x = x * 2\nreturn x", "chained"),
        ("if torch.equal(x, x * 2):\n    x = x * 2\nreturn x", "Python value read out of a tensor"),
        ("if x.sum() > 0:\n    for i in range(3):\n        x = x + i\nreturn x", "loop"),
    ],
)
def test_unrewritable_branches_are_reported_and_left(body, reason):
    code = _net(body)
    res = _check(code, fix="unsafe")
    found = [f for f in res.findings if f.rule_id == "TSX401"]
    assert found, [f.message for f in res.findings]
    assert reason in found[0].message, found[0].message
    assert not res.changed


def _run_both(code: str, calls):
    """Exec the original and the rewritten module; compare eager results and export the rewritten one."""
    res = _check(code, fix="unsafe")
    assert res.changed and not res.notes, res.notes
    new = res.new.decode()
    assert "torch.cond(" in new
    old_ns, new_ns = {}, {}
    exec(compile(code, "old.py", "exec"), old_ns)
    exec(compile(new, "new.py", "exec"), new_ns)
    torch.manual_seed(0)
    old = old_ns["Net"]().eval()
    torch.manual_seed(0)
    mig = new_ns["Net"]().eval()
    for args in calls:
        torch.testing.assert_close(mig(*args), old(*args))
    ep = torch.export.export(mig, calls[0], strict=False)
    for args in calls:
        if all(a.shape == b.shape for a, b in zip(args, calls[0])):
            torch.testing.assert_close(ep.module()(*args), old(*args))
    return new


@pytest.mark.parametrize(
    "body,args,calls",
    [
        # elif chain: nested torch.cond in the false branch
        ("if x.sum() > 1:\n    y = x * 2\nelif x.sum() < -1:\n    y = x - 3\nelse:\n    y = x.view(-1, 4)\nreturn y", "",
         [(torch.full((2, 4), 1.0),), (torch.full((2, 4), -1.0),), (torch.zeros(2, 4),)]),
        # int() and float() in the condition, tensor + optional-free operands, pass-through clone
        ("s = x.abs().sum()\nif int(s) >= 3:\n    x = x / s\nreturn x", "",
         [(torch.full((2, 4), 0.3),), (torch.full((2, 4), 0.2),)]),
        # early returns on both sides, tuple outputs
        ("if float(x.max()) > 0.5:\n    return x * 2, x.sum(0)\nreturn x.t().t(), x.mean(0)", "",
         [(torch.full((2, 4), 1.0),), (torch.zeros(2, 4),)]),
        # two arguments, `not`, comparison of two tensors
        ("if not (x.mean() > y.mean()):\n    x, y = y + 1, x - 1\nreturn x * y", ", y",
         [(torch.ones(2, 4), torch.zeros(2, 4)), (torch.zeros(2, 4), torch.ones(2, 4))]),
    ],
)
def test_rewrites_compute_the_same_and_export(body, args, calls):
    _run_both(_net(body, args), calls)


@pytest.mark.slow
def test_truth_of_a_number_becomes_a_bool_predicate_that_lowers(tmp_path):
    """`if t:` on a float tensor is `t != 0`: the predicate becomes `t.bool()` (ExecuTorch fails on a
    float predicate with error 0x23), and the program lowers and runs. (One `if`: see the xfail above
    for several in sequence.)"""
    code = _net("if bool(x.max() - 1):\n    x = x + 1\nreturn x")
    calls = [(torch.zeros(2, 4),), (torch.full((2, 4), 1.0),), (torch.ones(2, 4) * 3,)]
    new = _run_both(code, calls)
    assert "(x.max() - 1).bool()" in new
    assert "x.sum().bool()" in _check(_net("if x.sum():\n    x = x * 2\nreturn x"), fix="unsafe").new.decode()
    ns, old_ns = {}, {}
    exec(compile(new, "new.py", "exec"), ns)
    exec(compile(code, "old.py", "exec"), old_ns)
    method = _lower(torch.export.export(ns["Net"](), calls[0], strict=False), tmp_path, "truth", share_memory=True)
    for (x,) in calls:
        (out,) = method.execute([x])
        torch.testing.assert_close(out, old_ns["Net"]()(x))


_LOOP_AND_NESTING = '''
import torch
from torch import nn
from typing import Optional, Tuple


class Base(nn.Module):
    def __init__(self):
        super().__init__()
        self.layers = nn.ModuleList([nn.Linear(4, 4) for _ in range(3)])
        self.out = nn.Linear(4, 4)
        self.scale = 2.0


class Net(Base):
    def forward(self, x, mask: Optional[torch.Tensor] = None):
        n = x.shape[0]
        for layer in self.layers:
            if x.norm() > 1.0:  # shrink
                x = layer(x) / n
            else:
                x = layer(x) * 2
        if x.mean() > 0:
            y: torch.Tensor = x * 2
            if x.max() > 0.5:
                y = y + 1
            else:
                y = y - 1
        else:
            y = self.helper(x, 3)
            if mask is not None:
                y = y * mask
        a, b = self.split(self.out(y))
        if (a > b).all():
            c = a
        else:
            c = b * self.scale
        return c, self.pick(a, b)

    def helper(self, x: torch.Tensor, k: int) -> torch.Tensor:
        if x.sum() > 0:
            pass
        else:
            x = x * k
        return x

    def split(self, z: torch.Tensor) -> Tuple[torch.Tensor, torch.Tensor]:
        return z[:, :2], z[:, 2:]

    def pick(self, a: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
        if torch.any(a < 0):
            if b.sum() < 0:
                return -b
            return b
        return a
'''


def test_rewrite_through_loops_helpers_inheritance_and_nesting(tmp_path):
    """Typing follows TorchScript through `for layer in self.layers`, annotated helpers, tuple
    returns and a base class in the same file; nested `if`s become nested torch.cond. The rewrite
    computes what the scripted original computes, eagerly and exported with a dynamic batch."""
    res = _check(_LOOP_AND_NESTING, fix="unsafe")
    assert res.changed and not res.notes and res.findings == [], [f.message for f in res.findings]
    assert len(res.fixed) == 7, [f.message for f in res.fixed]
    (tmp_path / "cf_nesting_old.py").write_text(_LOOP_AND_NESTING, encoding="utf-8")
    (tmp_path / "cf_nesting_new.py").write_bytes(res.new)
    old = _load(tmp_path / "cf_nesting_old.py", "cf_nesting_old")
    new = _load(tmp_path / "cf_nesting_new.py", "cf_nesting_new")
    torch.manual_seed(0)
    eager = old.Net().eval()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DeprecationWarning)
        scripted = torch.jit.script(eager)
    torch.manual_seed(0)
    migrated = new.Net().eval()
    xs = [torch.randn(3, 4) * k for k in (0.1, 1.0, 5.0, -5.0)] + [torch.full((2, 4), -1.0), torch.full((5, 4), 1.0)]
    ep = torch.export.export(migrated, (xs[0],), dynamic_shapes=({0: torch.export.Dim("batch", min=1, max=64)},))
    mask = torch.rand(4)
    for x in xs:
        expected = scripted(x)
        torch.testing.assert_close(migrated(x), expected)
        torch.testing.assert_close(ep.module()(x), expected)
        torch.testing.assert_close(migrated(x, mask), scripted(x, mask))


def test_raise_on_data_suggests_a_torch_check_that_exports():
    """`if cond: raise` is reported with a `torch._check(...)` line; that line exports and still raises."""
    import re

    code = _net("if torch.isnan(x).any():\n    raise ValueError('nan')\nreturn x * 2")
    (finding,) = _check(code, fix="unsafe").findings
    suggestion = re.search(r"`(torch\._check\(.*\))` instead", finding.message).group(1)
    fixed = _net(f"{suggestion}\nreturn x * 2")
    ns = {}
    exec(compile(fixed, "fixed.py", "exec"), ns)
    ep = torch.export.export(ns["Net"](), (torch.randn(3, 4),), strict=False)
    torch.testing.assert_close(ep.module()(torch.ones(3, 4)), torch.full((3, 4), 2.0))
    with pytest.raises(RuntimeError):
        ep.module()(torch.full((3, 4), float("nan")))
    with pytest.raises(RuntimeError, match="nan"):
        ns["Net"]()(torch.full((3, 4), float("nan")))
