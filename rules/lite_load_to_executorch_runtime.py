import libcst as cst

from ts2export.rule import Applicability, Edit, Import, Invalid, Rule, Valid, argument
from ts2export.rules._callsite_util import LITE_LOAD, binding, classify_use, code, pte_path, record, writers


class LiteLoadToExecutorchRuntime(Rule):
    """
    ## What it does
    Rewrites `_load_for_lite_interpreter(path)` (from `torch.jit.mobile`) to
    `Runtime.get().load_program(path).load_method("forward")` (`executorch.runtime`), and the calls
    of the loaded module, `m(x, y)` / `m.forward(x, y)` / `m.run_method("forward", x, y)`, to
    `m.execute([x, y])[0]`. The path is kept, as TSX305 keeps it.

    ## Why
    The lite interpreter is deprecated; the `.pte` program that TSX305 writes is run from Python by
    the ExecuTorch runtime.

    ## Example
    ```python
    m = _load_for_lite_interpreter("model.ptl")
    y = m(x)
    ```
    becomes
    ```python
    m = Runtime.get().load_program("model.ptl").load_method("forward")
    y = m.execute([x])[0]
    ```

    ## Fix safety
    Unsafe: `execute` takes and returns flat lists of tensors. The rewrite takes the first output,
    which is the whole result only for a model that returns one tensor; for tuple or dict outputs
    rebuild them from the list (in order of the flattened output). The file must be the `.pte`
    written by TSX305. Keyword arguments and methods other than `forward` are reported, not fixed.
    """

    id = "TSX307"
    summary = "`_load_for_lite_interpreter` becomes the ExecuTorch runtime"
    applicability = Applicability.UNSAFE
    triggers = ("lite_interpreter",)

    VALID = [Valid("from executorch.runtime import Runtime\nm = Runtime.get().load_program('m.ptl')\n")]
    INVALID = [
        Invalid(
            "import torch\nfrom torch.jit.mobile import _load_for_lite_interpreter\n"
            "m = _load_for_lite_interpreter('m.ptl')\ny = m(torch.ones(2, 8))\nz = m.forward(torch.ones(3, 8))\n",
            "import torch\nfrom executorch.runtime import Runtime\n\n"
            "m = Runtime.get().load_program('m.ptl').load_method(\"forward\")\ny = m.execute([torch.ones(2, 8)])[0]\n"
            "z = m.execute([torch.ones(3, 8)])[0]\n",
            unsafe=True,
        ),
        Invalid("import torch.jit.mobile\nm = torch.jit.mobile._load_for_lite_interpreter('m.ptl')\nm.encode(1)\n", None, count=1),
    ]

    def visit_Call(self, node: cst.Call) -> None:
        if not self.matches(node.func, *LITE_LOAD):
            return
        path = argument(node, 0, "filename")
        record(self, node, "loaded-pte", path)
        if path is None:
            self.report(node, "`_load_for_lite_interpreter()` without a path")
            return
        link, blocked = writers(self, path)
        b = binding(self, node)
        problem = blocked or b.problem or (None if b.target is not None else "the loaded module is not bound to a name")
        edits: list[Edit] = []
        if problem is None:
            for u in (classify_use(self, r) for r in b.uses):
                call = u.outer
                args = None
                if u.kind == "call" and isinstance(call, cst.Call):
                    args = call.args
                elif u.kind == "attr-call" and u.detail == "run_method" and isinstance(call, cst.Call):
                    first = argument(call, 0)
                    if isinstance(first, cst.SimpleString) and first.evaluated_value == "forward":
                        args = call.args[1:]
                if args is None or any(a.keyword is not None or a.star for a in args):
                    problem = (f"`{code(call or u.node)}` (line {self.position(u.node).start.line}) has no rewrite: "
                               "call the ExecuTorch method as `method.execute([tensors])`")
                    break
                inputs = ", ".join(code(a.value) for a in args)
                edits.append(Edit(call, cst.parse_expression(f"{code(u.node)}.execute([{inputs}])[0]")))
        if problem:
            self.report(node, f"`_load_for_lite_interpreter(...)` not rewritten: {problem}{link}")
            return
        new = f'Runtime.get().load_program({pte_path(path)}).load_method("forward")'
        self.report(
            node,
            "`_load_for_lite_interpreter(...)` reads a lite-interpreter program: run the ExecuTorch `.pte` with "
            "`executorch.runtime.Runtime`; calls become `.execute([...])[0]` (the first output: rebuild tuple/dict "
            f"outputs by hand){link}",
            edits=[Edit(node, cst.parse_expression(new)), *edits],
            imports=[Import("executorch.runtime", "Runtime")],
        )
