import libcst as cst

from ts2export.rule import Applicability, Edit, Import, Invalid, Rule, Valid, argument
from ts2export.rule.callsites import LITE_LOAD, Use, binding, classify_use, code, pte_path, writers


class LiteLoadToExecutorchRuntime(Rule):
    """
    ## What it does
    Rewrites `_load_for_lite_interpreter(path)` (from `torch.jit.mobile`) to
    `Runtime.get().load_program(path).load_method("forward")` (`executorch.runtime`), and the calls
    of the loaded module, `m(x, y)` / `m.forward(x, y)` / `m.run_method("forward", x, y)`, to
    `m.execute([x, y])[0]`. Where other methods are called (`m.encode(y)`,
    `m.run_method("encode", y)`), the program is kept and each call loads its method:
    `m.load_method("encode").execute([y])[0]` (TSX308 writes such multi-method programs). The path
    is kept, as TSX305 keeps it.

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
    Unsafe: `execute` takes and returns flat lists of tensors. Where the result is unpacked right
    away (`a, b = m(x)`) the list is unpacked the same way; where it is used as a value the rewrite
    takes the first output, which is the whole result only for a model that returns one tensor.
    Results that are indexed, iterated or unpacked later (a tuple or dict of outputs, or one
    tensor?) are reported, not fixed. The file must be the `.pte`
    written by TSX305. Keyword arguments and methods other than `forward` are reported, not fixed.

    A call site: it migrates with its unit, or is held back while its writer stays TorchScript.
    A reader of an artifact that no checked file writes is held back unless `--external-
    readers`.
    """

    id = "TSX307"
    summary = "`_load_for_lite_interpreter` becomes the ExecuTorch runtime"
    applicability = Applicability.UNSAFE
    unit_site = True
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
            external_readers=True,
        ),
        Invalid(
            "import torch.jit.mobile\nm = torch.jit.mobile._load_for_lite_interpreter('m.ptl')\nz = m.encode(y)\n"
            "w = m.run_method('decode', z)\n",
            "from executorch.runtime import Runtime\n\nm = Runtime.get().load_program('m.ptl')\n"
            "z = m.load_method(\"encode\").execute([y])[0]\nw = m.load_method(\"decode\").execute([z])[0]\n",
            unsafe=True,
            external_readers=True,
        ),
        Invalid("import torch.jit.mobile\nm = torch.jit.mobile._load_for_lite_interpreter('m.ptl')\nm.encode(y, k=1)\n", None, count=1),
        Invalid(
            "from torch.jit.mobile import _load_for_lite_interpreter\nm = _load_for_lite_interpreter('m.ptl')\nlogits, hidden = m(x)\n",
            "from executorch.runtime import Runtime\n\nm = Runtime.get().load_program('m.ptl').load_method(\"forward\")\n"
            "logits, hidden = m.execute([x])\n",
            unsafe=True,
            external_readers=True,
        ),
        Invalid("from torch.jit.mobile import _load_for_lite_interpreter\nm = _load_for_lite_interpreter('m.ptl')\n"
                "out = m(x)\nprint(out['logits'])\n", None, count=1),
    ]

    def visit_Call(self, node: cst.Call) -> None:
        if not self.matches(node.func, *LITE_LOAD):
            return
        path = argument(node, 0, "filename")
        if path is None:
            self.report(node, "`_load_for_lite_interpreter()` without a path")
            return
        link, blocked = writers(self, path)
        b = binding(self, node)
        problem = blocked or b.problem or (None if b.target is not None else "the loaded module is not bound to a name")
        edits: list[Edit] = []
        calls: list[tuple[Use, str | None, list]] = []  # (use, method, args)
        if problem is None:
            for u in (classify_use(self, r) for r in b.uses):
                call = u.outer if not isinstance(u.outer, cst.Attribute) else self.parent(u.outer)
                method, args = None, None
                if u.kind == "call" and isinstance(call, cst.Call):
                    method, args = "forward", list(call.args)
                elif u.kind == "attr-call" and isinstance(call, cst.Call) and u.detail == "run_method":
                    first = argument(call, 0)
                    if isinstance(first, cst.SimpleString) and isinstance(first.evaluated_value, str):
                        method, args = first.evaluated_value, list(call.args[1:])
                elif u.kind == "attr-call" and isinstance(call, cst.Call) and not u.detail.startswith("_"):
                    method, args = u.detail, list(call.args)  # an @torch.jit.export method
                calls.append((u, method, args))
        several = any(m not in (None, "forward") for _, m, _ in calls)
        if problem is None:
            for u, method, args in calls:
                call = u.outer if not isinstance(u.outer, cst.Attribute) else self.parent(u.outer)
                if args is None or any(a.keyword is not None or a.star for a in args):
                    problem = (f"`{self.shown(call or u.node)}` (line {self.position(u.node).start.line}) has no rewrite: "
                               "call the ExecuTorch method as `method.execute([tensors])`")
                    break
                shape, why = self._result_shape(call)
                if why:
                    problem = f"{why} (line {self.position(call).start.line})"
                    break
                inputs = ", ".join(code(a.value) for a in args)
                first = "" if shape == "flat" else "[0]"
                target = f'{code(u.node)}.load_method("{method}")' if several else code(u.node)
                edits.append(Edit(call, cst.parse_expression(f"{target}.execute([{inputs}]){first}")))
        if problem:
            self.report(node, f"`_load_for_lite_interpreter(...)` not rewritten: {problem}{link}")
            return
        new = f'Runtime.get().load_program({pte_path(path)})' + ("" if several else '.load_method("forward")')
        self.report(
            node,
            "`_load_for_lite_interpreter(...)` reads a lite-interpreter program: run the ExecuTorch `.pte` with "
            "`executorch.runtime.Runtime`; calls become `.execute([...])` (a flat list of outputs: unpacked where the "
            f"call was, `[0]` where the result is used as one tensor){link}",
            edits=[Edit(node, cst.parse_expression(new)), *edits],
            imports=[Import("executorch.runtime", "Runtime")],
        )

    def _result_shape(self, call: cst.Call) -> tuple[str, str | None]:
        """How the result of a call of the lite module is used: "flat" (unpacked right away: the list
        that `execute` returns unpacks the same way for flat tuple outputs), "one" (used as one
        tensor), or why that cannot be told (several outputs used in a way a list does not keep)."""
        parent = self.parent(call)
        if isinstance(parent, cst.Assign) and parent.value is call and len(parent.targets) == 1:
            target = parent.targets[0].target
            if isinstance(target, (cst.Tuple, cst.List)):
                return "flat", None
            if isinstance(target, cst.Name):
                for ref in binding(self, call).uses:
                    use = self.parent(ref)
                    if isinstance(use, cst.Subscript) and use.value is ref:
                        return "", (f"`{target.value}[...]` indexes the result: cannot tell a tuple or dict of outputs "
                                    "from one tensor; index the list that `execute` returns by hand")
                    if isinstance(use, (cst.For, cst.CompFor)) and use.iter is ref:
                        return "", f"the result `{target.value}` is iterated: cannot tell several outputs from one tensor"
                    if isinstance(use, cst.Assign) and use.value is ref and isinstance(use.targets[0].target, (cst.Tuple, cst.List)):
                        return "", f"the result `{target.value}` is unpacked later: unpack `execute`'s list by hand"
        if isinstance(parent, cst.Subscript) and parent.value is call:
            return "", "the result is indexed: cannot tell a tuple or dict of outputs from one tensor"
        if isinstance(parent, (cst.For, cst.CompFor)) and parent.iter is call:
            return "", "the result is iterated: cannot tell several outputs from one tensor"
        return "one", None
