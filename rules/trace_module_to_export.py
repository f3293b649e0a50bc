import libcst as cst

from ts2export.rule import Applicability, Invalid, Rule, Valid
from ts2export.rule.callsites import HELPER, TRACE_MODULE, plan_trace_module

class TraceModuleToExport(Rule):
    """
    ## What it does
    Rewrites `traced = torch.jit.trace_module(model, {"forward": x, "encode": (y, z)})` to a dict
    of exported programs, one per method: `"model"` for `forward` (the name `torch.export.save`
    uses, so `torch.export.load` reads it) and one per other method, exported through a small
    `MethodAsModule` wrapper that the fix defines just before the statement. Uses follow:
    `traced(x)` -> `traced["model"].module()(x)`, `traced.encode(y, z)` ->
    `traced["encode"].module()(y, z)`, `traced.save(p)` / `torch.jit.save(traced, p)` ->
    `package_pt2(p, exported_programs=traced)` (one `.pt2` archive holding every program).
    Readers that call the other methods are rewritten by TSX304 to
    `load_pt2(p).exported_programs`. Where the result is written with
    `_save_for_lite_interpreter(p)` instead, forward is named `"forward"`, dims are bounded, and the
    dict is lowered to one multi-method ExecuTorch program (TSX307 reads it).

    ## Why
    `torch.jit.trace_module` is deprecated. An `ExportedProgram` has one entry point; a pt2
    archive holds several programs side by side.

    ## Example
    ```python
    traced = torch.jit.trace_module(model, {"forward": x, "encode": y})
    traced.save("model.pt")
    ```
    becomes
    ```python
    class MethodAsModule(torch.nn.Module):
        ...
    traced = {"model": torch.export.export(model, (x,), dynamic_shapes=...), "encode": torch.export.export(MethodAsModule(model, "encode"), (y,), dynamic_shapes=...)}
    package_pt2("model.pt", exported_programs=traced)
    ```

    ## Fix safety
    Unsafe: the caveats of TSX301 hold for every method, and `package_pt2`/`load_pt2` live in
    `torch.export.pt2_archive._package` (private in torch 2.13, verified to work). The result
    must be bound to a name by a plain statement; other uses of it are reported, not fixed.

    A call site: it migrates with its unit or is held back with it.
    """

    id = "TSX308"
    summary = "`torch.jit.trace_module` becomes one exported program per method in a pt2 archive"
    applicability = Applicability.UNSAFE
    unit_site = True

    VALID = [Valid("import torch\nep = torch.export.export(m, (x,))\n")]
    INVALID = [
        Invalid(
            "import torch\n\n\ndef deploy(model: torch.nn.Module, x, y):\n"
            "    traced = torch.jit.trace_module(model, {'forward': x, 'encode': (y,)})\n"
            "    traced.save('m.pt')\n    return traced.encode(y)\n",
            "import torch\nfrom torch.export import Dim\nfrom torch.export.pt2_archive._package import package_pt2\n\n\n"
            "def deploy(model: torch.nn.Module, x, y):\n"
            + "".join("    " + line + "\n" if line else "\n" for line in HELPER.splitlines())
            + "\n    traced = {'model': torch.export.export(model, (x,), dynamic_shapes=({i: Dim.AUTO for i in range(x.dim())},)), "
            "'encode': torch.export.export(MethodAsModule(model, 'encode'), (y,), dynamic_shapes=(({i: Dim.AUTO for i in range(y.dim())},),))}\n"
            "    package_pt2('m.pt', exported_programs=traced)\n    return traced['encode'].module()(y)\n",
            unsafe=True,
        ),
        Invalid("import torch\nt = torch.jit.trace_module(m, inputs)\n", None, count=1),
    ]

    def visit_Call(self, node: cst.Call) -> None:
        if not self.matches(node.func, TRACE_MODULE):
            return
        problem, edits, imports = plan_trace_module(self, node)
        if problem:
            self.report(node, f"`torch.jit.trace_module(...)` not rewritten: {problem}")
            return
        self.report(
            node,
            "`torch.jit.trace_module(...)` is deprecated: export one program per method (forward as \"model\") and "
            "save them together with `package_pt2` (read with `torch.export.load` for forward, `load_pt2` for all)",
            edits=edits,
            imports=imports,
        )
