import libcst as cst

from ts2export.rule import Applicability, Import, Invalid, Rule, Valid, argument
from ts2export.rule.callsites import JIT_SAVE, code, origin, plan_for, plan_instance_save, script_module_instance


class JitSaveToExportSave(Rule):
    """
    ## What it does
    Rewrites `torch.jit.save(m, path, _extra_files=files)` and `m.save(path, _extra_files=files)`
    to `torch.export.save(m, path, extra_files=files)` when `m` comes (in this file, through
    names bound once or `self.attr`) from a call that ts2export rewrites to an `ExportedProgram`:
    `torch.jit.trace` (TSX301), `torch.jit.script` with known inputs (TSX302), `torch.jit.load`
    (TSX304), or already `torch.export.export`/`load`. The path string is kept.

    ## Why
    A TorchScript archive can only be read by `torch.jit.load`. `torch.export.save` writes a
    `.pt2` archive (any file name works; see docs/callsites.md for renaming `.pt` to `.pt2`).

    ## Example
    ```python
    traced = torch.jit.trace(model, x)
    traced.save("model.pt")
    ```
    becomes
    ```python
    traced = torch.export.export(model, (x,), dynamic_shapes=...)
    torch.export.save(traced, "model.pt")
    ```

    ## Fix safety
    As safe as the rewrite of the artifact's origin (unsafe for TorchScript origins, safe for
    programs that are already exported). Every reader of the file must move to
    `torch.export.load` too (TSX304). Where the origin is not visible, or is not rewritten, the
    call is reported and left alone. The save of a set of programs (one per method, from
    `torch.jit.trace_module` or a scripted module with entry-point hints) is rewritten to
    `package_pt2` by the fix of that call (TSX308/TSX302); this rule only reports it. The save of
    an instance of a `torch.jit.ScriptModule` subclass (`m = Scaler(); m.save(p)`) becomes
    `torch.export.save(torch.export.export(m, inputs, dynamic_shapes=...), p)` when the readers
    of the artifact in the run call it with tensors whose shapes and dtypes are visible (the
    inputs are built from them with ones and zeros; TSX107 turns the class into an `nn.Module` in
    the same unit); otherwise it is reported without a fix, and the program model keeps the class
    a ScriptModule (TSX107 held back) while such a save stays.

    A call site: it migrates with its unit or is held back with it.
    """

    id = "TSX303"
    summary = "`torch.jit.save` / `ScriptModule.save` becomes `torch.export.save`"
    applicability = Applicability.UNSAFE
    unit_site = True

    VALID = [
        Valid("import torch\nep = torch.export.export(m, (x,))\ntorch.export.save(ep, 'm.pt2')\n"),
        Valid("import pickle\nclass A:\n    def save(self, p):\n        pass\nA().save('x')\n"),
    ]
    INVALID = [
        Invalid(
            "import torch\nep = torch.export.export(m, (x,))\ntorch.jit.save(ep, 'm.pt', _extra_files={'a': 'b'})\n",
            "import torch\nep = torch.export.export(m, (x,))\ntorch.export.save(ep, 'm.pt', extra_files={'a': 'b'})\n",
        ),
        Invalid(
            "import torch\n\n\ndef f(m: torch.nn.Module, x):\n    t = torch.jit.trace(m, (x,))\n    t.save('m.pt')\n",
            "import torch\nfrom torch.export import Dim\n\n\ndef f(m: torch.nn.Module, x):\n"
            "    t = torch.export.export(m, (x,), dynamic_shapes=({i: Dim.AUTO for i in range(x.dim())},))\n"
            "    torch.export.save(t, 'm.pt')\n",
            unsafe=True,
            with_rules=("TSX301",),
        ),
        Invalid("import torch\n\n\ndef f(m):\n    torch.jit.save(m, 'm.pt')\n", None, count=1),
        Invalid(
            "import torch\n\n\nclass Scaler(torch.jit.ScriptModule):\n    @torch.jit.script_method\n"
            "    def forward(self, x):\n        return x * 2\n\n\nm = Scaler()\nm.save('m.pt')\n",
            None,
            count=1,
        ),
    ]

    def _handle(self, node: cst.Call, obj: cst.BaseExpression, path: cst.BaseExpression | None,
                extra: cst.BaseExpression | None, spelled: str) -> None:
        if path is None:
            self.report(node, f"`{spelled}` without a path: rewrite it to `torch.export.save(ep, path)` by hand")
            return
        source = origin(self, obj)
        plan = plan_for(self, source) if source is not None else None
        if source is None:
            self.report(node, (
                f"`{spelled}` of `{self.shown(obj)}`, whose origin is not visible in this file: save an "
                f"`ExportedProgram` with `torch.export.save(ep, {self.shown(path)})` and load it with `torch.export.load`"))
            return
        if not plan.problem and plan.multi:
            self.report(node, f"`{spelled}` of one program per method (line {self.position(source).start.line}): rewritten "
                              "with that call (TSX308/TSX302) to `package_pt2`")
            return
        if plan.problem:
            self.report(node, f"`{spelled}` not rewritten: the module it saves stays TorchScript (see the finding at line {self.position(source).start.line})")
            return
        new = f"torch.export.save({code(obj)}, {code(path)}" + (f", extra_files={code(extra)}" if extra is not None else "") + ")"
        self.report(
            node,
            f"`{spelled}` writes a TorchScript archive: save the `ExportedProgram` with `torch.export.save` "
            f"(readers: `torch.export.load({self.shown(path)})`)",
            replacement=cst.parse_expression(new),
            imports=[Import("torch")],
            applicability=plan.applicability,
        )

    def visit_Call(self, node: cst.Call) -> None:
        if self.matches(node.func, JIT_SAVE):
            obj = argument(node, 0, "m")
            if obj is None:
                self.report(node, "`torch.jit.save` without a module")
                return
            self._handle(node, obj, argument(node, 1, "f"), argument(node, 2, "_extra_files"), "torch.jit.save(...)")
            return
        func = node.func
        if isinstance(func, cst.Attribute) and func.attr.value == "save":
            if origin(self, func.value) is None:
                cls = script_module_instance(self, func.value)
                path = argument(node, 0, "f")
                new, imports, _why = (plan_instance_save(self, node, func.value, path)
                                      if cls is not None and path is not None and argument(node, 1, "_extra_files") is None
                                      else (None, [], None))
                if new is not None:
                    self.report(node, (
                        f"`{self.shown(node)}` saves an instance of `{cls}`, a `torch.jit.ScriptModule` subclass, as "
                        f"TorchScript: export it with the inputs its readers pass and save the `ExportedProgram` "
                        f"(readers: `torch.export.load({self.shown(path)})`)"),
                        replacement=cst.parse_expression(new), imports=imports, applicability=Applicability.UNSAFE)
                elif cls is not None:
                    self.report(node, (
                        f"`{self.shown(node)}` saves an instance of `{cls}`, a `torch.jit.ScriptModule` subclass, as "
                        f"TorchScript; as an `nn.Module` (TSX107) it has no `.save`: export it (`ep = torch.export.export("
                        f"{code(func.value)}, inputs)`) and save with `torch.export.save(ep, ...)`, then load with "
                        "`torch.export.load`"))
                return  # not an artifact this file shows
            self._handle(node, func.value, argument(node, 0, "f"), argument(node, 1, "_extra_files"), ".save(...)")
