import libcst as cst

from ts2export.rule import Applicability, Invalid, Rule, Valid
from ts2export.rule.callsites import FUNCTION_HELPER, TRACE, in_init, plan_trace


class TraceToExport(Rule):
    """
    ## What it does
    Rewrites `torch.jit.trace(model, example)` to
    `torch.export.export(model, (example,), dynamic_shapes=...)` with `Dim.AUTO` for every dim of
    every example tensor, and follows the result: where it is only called, the program's
    `.module()` is bound; where it is also saved or lowered, the name keeps the `ExportedProgram`
    and calls become `traced.module()(x)`. `traced.eval()` is dropped. `example_kwarg_inputs`
    become `kwargs=`; `strict`, `check_trace`, `check_inputs` and `check_tolerance` are dropped.
    A traced plain function (a `def` of this file) is exported through a small `FunctionAsModule`
    wrapper that the fix defines just before the statement.

    ## Why
    `torch.jit.trace` is deprecated. A trace is shape-generic (a model traced at batch 2 runs at
    batch 7); `torch.export` specializes every dim unless told otherwise, so the rewrite asks for
    `Dim.AUTO` on each dim: dims of size >= 2 stay dynamic wherever the model allows it.

    ## Example
    ```python
    traced = torch.jit.trace(model, torch.randn(2, 8))
    y = traced(x)
    ```
    becomes
    ```python
    traced = torch.export.export(model, (torch.randn(2, 8),), dynamic_shapes=({0: Dim.AUTO, 1: Dim.AUTO},)).module()
    y = traced(x)
    ```

    ## Fix safety
    Unsafe. The exported module runs in the training mode the model had at export time (`.eval()`
    on it raises, so it is dropped); dims the model constrains are specialized (export says which);
    dims of size 1 in the example are specialized; the dropped `check_inputs` expressions no longer
    run (random ones no longer advance the random number generator). The rule does not fix, and reports instead:
    an example whose batch dim is 0/1 (or a size-1 dim that `check_inputs` vary), a model class (in this file) with `nn.GRU`/`LSTM`/`RNN`
    (export specializes their sequence length), an example whose
    structure or rank it cannot see, and results used in ways it cannot follow (bound twice,
    methods other than `forward` called on them). For a traced function: an example that goes to a
    parameter annotated as something other than a tensor (a named tuple, a config object), an
    example from an unknown call when the parameter has no annotation, and calls of the traced
    function with keyword arguments. A trace inside `with pytest.warns(...)` stays: the test asserts
    the tracer's own warnings.

    A call site: it migrates with its unit (the saves of its program and their readers) or is
    held back with it.
    """

    id = "TSX301"
    summary = "`torch.jit.trace(...)` becomes `torch.export.export(...)` with dynamic dims"
    applicability = Applicability.UNSAFE
    unit_site = True

    VALID = [
        Valid("import torch\nep = torch.export.export(m, (torch.randn(2, 3),))\n"),
        Valid("import torch\n\n\nclass P(torch.nn.Module):\n    def __init__(self):\n        super().__init__()\n"
              "        self.enc = torch.jit.trace(Enc(), torch.randn(2, 3))\n"),
        Valid("def trace(m, x):\n    return m\nt = trace(1, 2)\n"),
    ]
    INVALID = [
        Invalid(
            "import torch\n\n\ndef run(model: torch.nn.Module):\n    traced = torch.jit.trace(model, torch.randn(2, 8))\n"
            "    traced.eval()\n    return traced(torch.randn(5, 8))\n",
            "import torch\nfrom torch.export import Dim\n\n\ndef run(model: torch.nn.Module):\n"
            "    traced = torch.export.export(model, (torch.randn(2, 8),), dynamic_shapes=({0: Dim.AUTO, 1: Dim.AUTO},)).module()\n"
            "    return traced(torch.randn(5, 8))\n",
            unsafe=True,
        ),
        Invalid(
            "import torch\n\n\ndef run(model: torch.nn.Module, x, y):\n    traced = torch.jit.trace(model, (x, y), check_trace=False)\n"
            "    torch.export.save(traced, 'm.pt2')\n    return traced(x, y)\n",
            "import torch\nfrom torch.export import Dim\n\n\ndef run(model: torch.nn.Module, x, y):\n"
            "    traced = torch.export.export(model, (x, y), dynamic_shapes=({i: Dim.AUTO for i in range(x.dim())}, "
            "{i: Dim.AUTO for i in range(y.dim())}))\n"
            "    torch.export.save(traced, 'm.pt2')\n    return traced.module()(x, y)\n",
            unsafe=True,
        ),
        Invalid(
            "import torch\n\n\ndef run(model: torch.nn.Module, x):\n    return torch.jit.trace(model, example_kwarg_inputs={'x': x})\n",
            "import torch\nfrom torch.export import Dim\n\n\ndef run(model: torch.nn.Module, x):\n"
            "    return torch.export.export(model, (), kwargs={'x': x}, dynamic_shapes={'x': {i: Dim.AUTO for i in range(x.dim())}}).module()\n",
            unsafe=True,
        ),
        # batch of 1: export would specialize it; reported, not fixed
        Invalid("import torch\nt = torch.jit.trace(m, torch.randn(1, 8))\n", None, count=1),
        # a recurrent layer: export specializes the sequence length
        Invalid(
            "import torch\nfrom torch import nn\n\n\nclass Enc(nn.Module):\n    def __init__(self):\n"
            "        super().__init__()\n        self.rnn = nn.GRU(8, 8, batch_first=True)\n\n"
            "    def forward(self, x):\n        return self.rnn(x)[0]\n\n\n"
            "t = torch.jit.trace(Enc(), torch.randn(2, 5, 8))\n",
            None,
            count=1,
        ),
        # check_inputs vary a dim that is 1 in the example
        Invalid("import torch\nt = torch.jit.trace(m, torch.randn(4, 1, 8), check_inputs=[(torch.randn(4, 3, 8),)])\n", None, count=1),
        # a function, not a module: exported through a small wrapper module
        Invalid(
            "import torch\n\n\ndef f(x):\n    return x + 1\n\n\nt = torch.jit.trace(f, torch.randn(2))\n",
            "import torch\nfrom torch.export import Dim\n\n\ndef f(x):\n    return x + 1\n\n\n"
            + FUNCTION_HELPER
            + "\n\nt = torch.export.export(FunctionAsModule(f), (torch.randn(2),), dynamic_shapes=(({0: Dim.AUTO},),)).module()\n",
            unsafe=True,
        ),
    ]

    def visit_Call(self, node: cst.Call) -> None:
        if not self.matches(node.func, TRACE) or in_init(self, node):
            return  # a traced submodule built in __init__ belongs to TSX106
        plan = plan_trace(self, node)
        if plan.problem:
            self.report(node, f"`torch.jit.trace(...)` not rewritten: {plan.problem}")
            return
        kept = "`ExportedProgram` (saved/lowered below; calls go through `.module()`)" if plan.ep_mode else "exported module (`.module()`)"
        notes = "".join(f"; {n}" for n in plan.notes)
        self.report(
            node,
            f"`torch.jit.trace(...)` is deprecated: export with `torch.export.export(..., dynamic_shapes=Dim.AUTO per dim)`"
            f" and use the {kept}{notes}",
            edits=plan.edits,
            imports=plan.imports,
        )
