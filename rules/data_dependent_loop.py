from __future__ import annotations

import libcst as cst

from ts2export.rule import Applicability, Invalid, Rule, Valid

from ._control_flow import DEPENDENT, code_of, is_builtin_call
from ._module_walk import function_sites, is_module_class, module_sites, screened_base_names, torch_names


class DataDependentLoop(Rule):
    """
    ## What it does
    Reports loops in `forward` (and the methods it calls, and the functions of the same file they
    call) of an `nn.Module` whose number of iterations depends on tensor *values*: `for _ in range(int(n.item()))`, `for i in range(t)`,
    `while x.norm() > eps:`, `while bool(done):`, and loops on the size of a tensor whose size
    is data-dependent (`while order.numel() > 0:` where `order` is cut by a boolean mask, as a
    hand-written non-maximum suppression does). Loops over shapes (`range(x.size(0))`) and Python
    values are left alone.

    ## Why
    TorchScript compiled such a loop into a `prim::Loop` that ran as often as the data said.
    `torch.export` unrolls loops while tracing, so it has to know the trip count: it stops with
    `GuardOnDataDependentSymNode` ("Could not guard on data-dependent expression"). There is no
    rewrite that keeps every such loop correct, so this rule reports it with the options:

    * restructure with a fixed bound: loop to a known maximum (a constant or a shape) and mask the
      iterations past the data-dependent count (`torch.where(i < n, new, old)`), or compute the
      result in closed form / with a vectorised op (`cumsum`, `torch.repeat_interleave`, ...);
    * `torch._higher_order_ops.while_loop(cond_fn, body_fn, carried_inputs)` keeps a real loop in the
      exported program (a private API: check that your target runtime supports it).

    ## Example
    ```python
    def forward(self, x, steps):
        for _ in range(int(steps.item())):
            x = self.cell(x)
        return x
    ```
    is reported. One way out, with a known maximum `self.max_steps`:
    ```python
    def forward(self, x, steps):
        for i in range(self.max_steps):
            x = torch.where(i < steps, self.cell(x), x)
        return x
    ```

    ## Fix safety
    Report only: the right restructuring depends on what the loop computes.

    Report only. Left in code that an entry point exports, it holds that entry point back.
    """

    id = "TSX402"
    summary = "loop whose trip count depends on a tensor value: torch.export cannot trace it"
    applicability = Applicability.NONE
    blocks_export = True
    triggers = ("Module",)
    # Only the methods `forward` runs (and those TorchScript compiles as entry points, named with
    # `torch.jit.export` or `script_method`) are looked at.
    also_requires = (("forward", "jit", "script_method"),)

    VALID = [
        Valid(
            "import torch\n\n\nclass Net(torch.nn.Module):\n"
            "    def __init__(self):\n        super().__init__()\n        self.depth = 3\n\n"
            "    def forward(self, x):\n"
            "        for i in range(x.size(0)):\n            x = x + i\n"
            "        for _ in range(self.depth):\n            x = x * 2\n"
            "        for row in x:\n            x = x + row\n"
            "        n = x.shape[1]\n        while n > 1:\n            n = n // 2\n"
            "        return x\n"
        ),
        Valid("def f(x):\n    while x.sum() > 0:\n        x = x - 1\n    return x\n"),
    ]
    INVALID = [
        Invalid(
            "import torch\n\n\nclass Net(torch.nn.Module):\n"
            "    def forward(self, x, steps):\n"
            "        for _ in range(int(steps.item())):\n            x = x * 0.5\n"
            "        return x\n",
            count=1,
        ),
        Invalid(
            "import torch\n\n\ndef keep_best(boxes, scores):\n"
            "    order = torch.argsort(scores, descending=True)\n"
            "    kept = []\n"
            "    while order.numel() > 0:\n"
            "        kept.append(order[0])\n"
            "        rest = order[1:]\n"
            "        order = rest[(boxes[rest] - boxes[order[0]]).abs() > 0.5]\n"
            "    return torch.stack(kept)\n\n\n"
            "class Post(torch.nn.Module):\n"
            "    def forward(self, boxes, scores):\n"
            "        return keep_best(boxes, scores)\n",
            count=1,
        ),
        Invalid(
            "import torch\nfrom torch import nn\n\n\nclass Net(nn.Module):\n"
            "    def forward(self, x):\n"
            "        while x.norm() > 1.0:\n            x = x / 2\n"
            "        return self.refine(x)\n\n"
            "    def refine(self, x):\n"
            "        n = x.argmax()\n"
            "        for i in range(n):\n            x = x + 1\n"
            "        return x\n",
            count=2,
        ),
    ]

    def __init__(self, context) -> None:
        super().__init__(context)
        self._local_modules: set[str] = set()
        self._functions: dict[str, cst.FunctionDef] = {}
        self._reported: set[int] = set()  # a function several modules call is reported once

    def visit_Module(self, node: cst.Module) -> None:
        self._functions = {s.name.value: s for s in node.body if isinstance(s, cst.FunctionDef)}

    def visit_ClassDef(self, node: cst.ClassDef) -> None:
        if not is_module_class(node, screened_base_names(self), self._local_modules):
            return
        self._local_modules.add(node.name.value)
        names = torch_names(self)
        for site in [*module_sites(node, names, self._local_modules),
                     *function_sites(node, names, self._local_modules, self._functions)]:
            stmt, analyzer, scope = site.stmt, site.analyzer, site.scope
            if id(stmt) in self._reported:
                continue
            self._reported.add(id(stmt))
            if isinstance(stmt, cst.While) and analyzer.kind(stmt.test, scope) in DEPENDENT:
                self.report(stmt.test, f"`while {_short(stmt.test)}:` repeats as often as a tensor value says; "
                            "torch.export cannot trace that: " + _OPTIONS)
            elif isinstance(stmt, cst.For) and isinstance(stmt.iter, cst.Call) and is_builtin_call(stmt.iter, "range", scope):
                if any(analyzer.kind(a.value, scope) in DEPENDENT for a in stmt.iter.args):
                    self.report(stmt.iter, f"`for ... in {_short(stmt.iter)}:` has a trip count read from a tensor; "
                                "torch.export cannot trace that: " + _OPTIONS)


_OPTIONS = ("loop to a fixed maximum and mask the extra iterations (`torch.where`), vectorise it, or use "
            "`torch._higher_order_ops.while_loop` (private API)")


def _short(node: cst.CSTNode) -> str:
    text = " ".join(code_of(node).split())
    return text if len(text) <= 50 else text[:47] + "..."
