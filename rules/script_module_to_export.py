import libcst as cst

from ts2export.rule import Alternative, Applicability, Invalid, Rule, Valid, argument
from ts2export.rule.callsites import SCRIPT, in_init, model_kind, plan_script


class ScriptModuleToExport(Rule):
    """
    ## What it does
    Rewrites `scripted = torch.jit.script(model)` (a module instance) to
    `torch.export.export(model, inputs, dynamic_shapes=...)` when the program shows example
    inputs: a hint comment `# ts2export: inputs=(torch.ones(2, 8),)` on the line or in the comment
    lines just above, an entry `"path/to/file.py::scripted" = "(torch.ones(2, 8),)"` under
    `[tool.ts2export.inputs]` in pyproject.toml (the key may also name the scripted module), the
    first call of the scripted object in the same scope whose arguments are bound before the script
    call, the example of a `torch.jit.trace` of the same module in the same function, or a tensor
    bound before the call to a conventional name (`example_input(s)`, `example`, `dummy_input(s)`,
    `sample_input(s)`). Uses are followed as for `torch.jit.trace` (TSX301). Where nothing shows the inputs, it
    reports the exact hint to add.

    A module class (visible in this file) with `@torch.jit.export` entry points whose artifact is
    saved needs their inputs too: with `# ts2export: inputs.<method>=(...)` hints (or config keys
    `"file.py::name.<method>"`) the call becomes one program per method (forward as `"model"`),
    saved together with `package_pt2` as for `trace_module` (TSX308); without them it is reported.

    ## Why
    `torch.jit.script` compiled the module without inputs; `torch.export` records the program by
    running it, so it needs example inputs. Guessing them would export the wrong program.

    ## Example
    ```python
    scripted = torch.jit.script(model)  # ts2export: inputs=(torch.randn(2, 8),)
    scripted.save("model.pt")
    ```
    becomes
    ```python
    scripted = torch.export.export(model, (torch.randn(2, 8),), dynamic_shapes=({0: Dim.AUTO, 1: Dim.AUTO},))  # ts2export: inputs=(torch.randn(2, 8),)
    torch.export.save(scripted, "model.pt")
    ```

    ## Fix safety
    Unsafe: a scripted module kept Python control flow; the exported program is recorded for the
    example and its guards (data-dependent branches must become `torch.cond`, see the
    control-flow rules). The other caveats of TSX301 apply. `@torch.jit.export` methods called on
    the result (without hints for them) are reported, not fixed. Hint expressions run where the
    export runs: `torch.randn` there advances the random number generator. Functions, classes
    and scripted submodules stored in `__init__` are left to the TSX1xx rules.

    Where the module cannot be exported (no inputs in sight, a target that cannot be followed, a
    method other than `forward` called on it, a recurrent layer) but the program only calls the
    scripted module in the function that made it (nothing saves, loads, freezes, lowers or returns
    it, no code reads `.code`/`.graph` or checks its type, and the original object is only called
    again, never changed), TorchScript only made those calls faster: the call becomes the module
    itself, which computes the same, with a comment (`torch.compile` compiles it again if the
    speed matters). This releases whatever the call might have compiled (the decorators of a
    model zoo behind `create_model(name)`). Where the export is planned, the eager module is
    offered as a second fix: the program model takes it when the export must wait (the code it
    exports keeps a construct torch.export rejects, or may, its target not followed), and the
    finding says why.

    A call site: it migrates with its unit (the saves of its program and their readers) or is
    held back with it. An object that may be a function is never exported as a module.
    """

    id = "TSX302"
    summary = "`torch.jit.script(module)` becomes `torch.export.export(module, inputs)` where inputs are shown"
    applicability = Applicability.UNSAFE
    unit_site = True

    VALID = [
        Valid("import torch\n\n\ndef f(x):\n    return x\n\n\ng = torch.jit.script(f)\n"),
        Valid("import torch\n\n\nclass P(torch.nn.Module):\n    def __init__(self, sub):\n        super().__init__()\n"
              "        self.sub = torch.jit.script(sub)\n"),
    ]
    INVALID = [
        Invalid(
            "import torch\n\n\ndef run(model: torch.nn.Module):\n    scripted = torch.jit.script(model)  # ts2export: inputs=(torch.randn(2, 8),)\n"
            "    return scripted(torch.randn(4, 8))\n",
            "import torch\nfrom torch.export import Dim\n\n\ndef run(model: torch.nn.Module):\n"
            "    scripted = torch.export.export(model, (torch.randn(2, 8),), dynamic_shapes=({0: Dim.AUTO, 1: Dim.AUTO},)).module()  # ts2export: inputs=(torch.randn(2, 8),)\n"
            "    return scripted(torch.randn(4, 8))\n",
            unsafe=True,
        ),
        Invalid(
            "import torch\n\n\ndef run(model: torch.nn.Module, x):\n    scripted = torch.jit.script(model)\n    return scripted(x)\n",
            "import torch\nfrom torch.export import Dim\n\n\ndef run(model: torch.nn.Module, x):\n"
            "    scripted = torch.export.export(model, (x,), dynamic_shapes=({i: Dim.AUTO for i in range(x.dim())},)).module()\n"
            "    return scripted(x)\n",
            unsafe=True,
        ),
        Invalid("import torch\n\n\ndef run(model: torch.nn.Module):\n    torch.jit.script(model).save('m.pt')\n", None, count=1),
        Invalid(
            "import torch\n\n\ndef run(model: torch.nn.Module, batches, fast: bool):\n    if fast:\n"
            "        model = torch.jit.script(model)\n    return [model(b) for b in batches]\n",
            "import torch\n\n\ndef run(model: torch.nn.Module, batches, fast: bool):\n    if fast:\n"
            "        # ts2export: `torch.jit.script(model)` only sped up the calls below; the module runs eager "
            "(torch.compile(model) compiles it again)\n"
            "        model = model\n    return [model(b) for b in batches]\n",
            unsafe=True,
        ),
        # its TorchScript code is read, or the original module is used again: no fix
        Invalid("import torch\n\n\ndef run(model: torch.nn.Module, x):\n    scripted = torch.jit.script(model)\n"
                "    print(scripted.code)\n    return scripted(x)\n", None, count=1),
        Invalid("import torch\n\n\ndef run(model: torch.nn.Module, x):\n    scripted = torch.jit.script(model)\n"
                "    model.train()\n    return scripted(x)\n", None, count=1),
    ]

    def visit_Call(self, node: cst.Call) -> None:
        if not self.matches(node.func, SCRIPT):
            return
        obj = argument(node, 0, "obj")
        if obj is None:
            return
        if model_kind(self, obj) in ("function", "class"):
            return  # a function or class: the TSX1xx rules own it (TSX105)
        if isinstance(obj, cst.Lambda):
            return
        if in_init(self, node):
            return  # a scripted submodule built in __init__: TSX106 owns it
        plan = plan_script(self, node)
        if plan.problem:
            self.report(node, f"`torch.jit.script(...)` not rewritten: {plan.problem}")
            return
        if plan.eager:
            self.report(node, _eager_message(plan.notes[0]), edits=plan.edits, imports=plan.imports)
            return
        kept = "`ExportedProgram` (saved/lowered below; calls go through `.module()`)" if plan.ep_mode else "exported module (`.module()`)"
        notes = "".join(f"; {n}" for n in plan.notes)
        eager = plan.alternative
        self.report(
            node,
            f"`torch.jit.script(module)` is deprecated: export it with `torch.export.export` and use the {kept}{notes}",
            edits=plan.edits,
            imports=plan.imports,
            alternative=Alternative(tuple(eager.edits), tuple(eager.imports), _eager_message("{why}"))
            if eager is not None else None,
        )


def _eager_message(why: str) -> str:
    return ("`torch.jit.script(module)` is deprecated, and this one only sped up calls in the code that made it "
            f"(nothing saves, loads or returns it): the module runs eager, which computes the same "
            f"(it was not exported: {why})")
