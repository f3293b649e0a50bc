import libcst as cst

from ts2export.rule import Applicability, Invalid, Rule, Valid
from ts2export.rule.callsites import JIT_LOAD, argument, plan_load, writers


class JitLoadToExportLoad(Rule):
    """
    ## What it does
    Rewrites `torch.jit.load(path, map_location=dev, _extra_files=files)` to
    `torch.export.load(path, extra_files=files).module()`, moving the program with
    `torch.export.passes.move_to_device_pass(ep, dev)` when a `map_location` is given. It follows
    the loaded object (names bound once, `self.attr` bound once in the class, rebinds such as
    `m = m.eval()` or `m = m.to(device)` allowed): `.eval()` and `.train(False)` on it are dropped (an exported module rejects them); where the object is saved
    again, the name keeps the `ExportedProgram` and calls go through `.module()`.

    ## Why
    `torch.jit.load` reads TorchScript archives only. Once the producer saves with
    `torch.export.save` (TSX303), readers must load with `torch.export.load`.

    ## Example
    ```python
    model = torch.jit.load("model.pt", map_location="cpu")
    model.eval()
    y = model(x)
    ```
    becomes
    ```python
    model = torch.export.passes.move_to_device_pass(torch.export.load("model.pt"), "cpu").module()
    y = model(x)
    ```

    ## Fix safety
    Unsafe: the file must now be written by `torch.export.save` (old TorchScript files no longer
    load), and the module runs in the mode it was exported in (`.eval()` is gone; `.train()` is
    reported and not fixed). Where methods other than `forward` are called on the loaded object (TorchScript
    `@torch.jit.export` methods or `trace_module` entries), every program of the pt2 archive is
    loaded (`load_pt2(path).exported_programs`, a private torch 2.13 API) into a dict of modules:
    `m.encode(y)` becomes `m["encode"](y)`, `m(x)` becomes `m["model"](x)`; the writer must save
    one program per method (TSX308 does for `trace_module`).
    The finding names the call sites in this file that write the same path.

    A call site: it migrates with its unit, or is held back while its writer stays TorchScript.
    A reader of an artifact that no checked file writes is held back unless `--external-
    readers`.
    """

    id = "TSX304"
    summary = "`torch.jit.load(...)` becomes `torch.export.load(...).module()`"
    applicability = Applicability.UNSAFE
    unit_site = True

    VALID = [
        Valid("import torch\nm = torch.export.load('m.pt2').module()\n"),
        Valid("import torch\nsd = torch.load('w.pt')\n"),
    ]
    INVALID = [
        Invalid(
            "import torch\n\n\nclass Server:\n    def __init__(self, path):\n        self.model = torch.jit.load(path, map_location='cpu')\n"
            "        self.model.eval()\n\n    def __call__(self, x):\n        return self.model(x)\n",
            "import torch\nimport torch.export.passes\n\n\nclass Server:\n    def __init__(self, path):\n"
            "        self.model = torch.export.passes.move_to_device_pass(torch.export.load(path), 'cpu').module()\n\n"
            "    def __call__(self, x):\n        return self.model(x)\n",
            unsafe=True,
            external_readers=True,
        ),
        Invalid(
            "import torch\nfiles = {'meta': ''}\nm = torch.jit.load('m.pt', _extra_files=files).eval()\ny = m(torch.ones(2, 2))\n",
            "import torch\nfiles = {'meta': ''}\nm = torch.export.load('m.pt', extra_files=files).module()\ny = m(torch.ones(2, 2))\n",
            unsafe=True,
            external_readers=True,
        ),
        Invalid(
            "import torch\nm = torch.jit.load('m.pt')\nm.eval()\nz = m.encode(torch.ones(2))\ny = m(z)\n",
            "import torch\nfrom torch.export.pt2_archive._package import load_pt2\n\n"
            "m = {name: ep.module() for name, ep in load_pt2('m.pt').exported_programs.items()}\n"
            "z = m[\"encode\"](torch.ones(2))\ny = m[\"model\"](z)\n",
            unsafe=True,
            external_readers=True,
        ),
        Invalid("import torch\nm = torch.jit.load('m.pt')\nm.train()\n", None, count=1),
    ]

    def visit_Call(self, node: cst.Call) -> None:
        if not self.matches(node.func, JIT_LOAD):
            return
        plan = plan_load(self, node)
        path = argument(node, 0, "f")
        link, blocked = writers(self, path, plan.methods) if path is not None else ("", None)
        if blocked and not plan.problem:
            plan.problem = blocked
        if plan.problem:
            self.report(node, f"`torch.jit.load(...)` not rewritten: {plan.problem}{link}")
            return
        notes = "".join(f"; {n}" for n in plan.notes)
        self.report(
            node,
            f"`torch.jit.load(...)` reads TorchScript: load the program written by `torch.export.save` with "
            f"`torch.export.load({self.shown(path)})`{notes}{link}",
            edits=plan.edits,
            imports=plan.imports,
        )
