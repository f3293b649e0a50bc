import libcst as cst

from ts2export.rule import Import, Applicability, Invalid, Rule, Valid, argument
from ts2export.rule.callsites import EXPORT_LOAD, JIT_LOAD, LITE_METHODS, MOVE, code, origin, plan_for, pte_path

_ET = [
    Import("pathlib"),
    Import("executorch.exir", "to_edge_transform_and_lower"),
    Import("executorch.backends.xnnpack.partition.xnnpack_partitioner", "XnnpackPartitioner"),
]


class LiteSaveToExecutorch(Rule):
    """
    ## What it does
    Rewrites `m._save_for_lite_interpreter(path)` to an ExecuTorch program lowered with XNNPACK:
    `pathlib.Path(path).write_bytes(to_edge_transform_and_lower(m, partitioner=[XnnpackPartitioner()]).to_executorch().buffer)`,
    and `m._save_to_buffer_for_lite_interpreter()` to the `.buffer` of the same. The path is kept
    (ExecuTorch reads any file name; docs/callsites.md says how to rename `.ptl` to `.pte`).
    `m` must come (in this file) from a call that ts2export exports (TSX301/TSX302); its dynamic
    dims are then bounded (`Dim.AUTO(max=...)`) because ExecuTorch plans memory for the largest
    shape and rejects larger inputs.

    ## Why
    The lite interpreter (PyTorch Mobile) is deprecated; ExecuTorch replaces it. Its `.pte`
    programs run from Python (`executorch.runtime.Runtime`), C++, Android and iOS.

    ## Example
    ```python
    traced = torch.jit.trace(model, torch.randn(2, 8))
    traced._save_for_lite_interpreter("model.ptl")
    ```
    becomes
    ```python
    traced = torch.export.export(model, (torch.randn(2, 8),), dynamic_shapes=({0: Dim.AUTO(max=64), 1: Dim.AUTO(max=64)},))
    pathlib.Path("model.ptl").write_bytes(to_edge_transform_and_lower(traced, partitioner=[XnnpackPartitioner()]).to_executorch().buffer)
    ```

    ## Fix safety
    Unsafe: the device-side loader changes (`LiteModuleLoader` on Android, `torch::jit::_load_for_mobile`
    in C++ become ExecuTorch's `Module`); ts2export cannot rewrite those (not Python). Inputs larger
    than the bound of a dynamic dim are rejected at run time: raise the `max=` to your serving maximum.

    A call site: it migrates with its unit or is held back with it.
    """

    id = "TSX305"
    summary = "`_save_for_lite_interpreter` becomes an ExecuTorch `.pte` (XNNPACK)"
    applicability = Applicability.UNSAFE
    unit_site = True
    triggers = ("lite_interpreter",)

    VALID = [
        Valid("import torch\nm.save('x.pt')\n"),
    ]
    INVALID = [
        Invalid(
            "import torch\nep = torch.export.export(m, (x,))\nep._save_for_lite_interpreter('m.ptl')\n",
            "import torch\nimport pathlib\nfrom executorch.backends.xnnpack.partition.xnnpack_partitioner import XnnpackPartitioner\n"
            "from executorch.exir import to_edge_transform_and_lower\n\n"
            "ep = torch.export.export(m, (x,))\n"
            "pathlib.Path('m.ptl').write_bytes(to_edge_transform_and_lower(ep, partitioner=[XnnpackPartitioner()]).to_executorch().buffer)\n",
        ),
        Invalid("def deploy(m):\n    m._save_for_lite_interpreter('m.ptl')\n", None, count=1),
        Invalid("import torch\nep = torch.export.export(m, (x,))\nep._save_for_lite_interpreter('m.ptl', _extra_files={'a': 'b'})\n",
                None, count=1),
        Invalid(
            "import torch\nep = torch.export.export(m, (x,))\nbuf = ep._save_to_buffer_for_lite_interpreter()\n",
            "import torch\nfrom executorch.backends.xnnpack.partition.xnnpack_partitioner import XnnpackPartitioner\n"
            "from executorch.exir import to_edge_transform_and_lower\n\n"
            "ep = torch.export.export(m, (x,))\n"
            "buf = to_edge_transform_and_lower(ep, partitioner=[XnnpackPartitioner()]).to_executorch().buffer\n",
        ),
    ]

    def visit_Call(self, node: cst.Call) -> None:
        func = node.func
        if not (isinstance(func, cst.Attribute) and func.attr.value in LITE_METHODS):
            return
        self._check(node, func, func.attr.value)

    def _check(self, node: cst.Call, func: cst.Attribute, name: str) -> bool:
        """Report the call; True when the program it writes is migrated to ExecuTorch."""
        extra = argument(node, 1 if name == "_save_for_lite_interpreter" else 0, "_extra_files")
        if extra is not None:
            self.report(node, (
                f"`.{name}(..., _extra_files=...)` not rewritten: an ExecuTorch `.pte` holds no extra files; write "
                f"`{self.shown(extra)}` next to the program (or in your app's assets) and then lower it with "
                "`to_edge_transform_and_lower(ep, partitioner=[XnnpackPartitioner()]).to_executorch()` by hand"))
            return False
        source = origin(self, func.value)
        if source is None:
            self.report(node, (
                f"`.{name}(...)` on `{self.shown(func.value)}`, whose origin is not visible in this file: export it and lower it "
                "with `to_edge_transform_and_lower(ep, partitioner=[XnnpackPartitioner()]).to_executorch()`, "
                "then write `.buffer` to a `.pte` file"))
            return False
        if self.matches(source.func, JIT_LOAD, EXPORT_LOAD, MOVE):
            self.report(node, (
                f"`.{name}(...)` of a loaded program not rewritten: its dynamic dims may have no upper bound (ts2export bounds them only where the program is lowered in the same file), and ExecuTorch "
                "then accepts only the example's shapes; lower it where it is exported, with `Dim.AUTO(max=...)` dims"))
            return False
        plan = plan_for(self, source)
        if not plan.problem and plan.multi:
            self.report(node, f"`.{name}(...)` of one program per method (line {self.position(source).start.line}): lowered "
                              "with that call (TSX308/TSX302) to a multi-method ExecuTorch program")
            return True
        if plan.problem:
            self.report(node, f"`.{name}(...)` not rewritten: the module it saves stays TorchScript (see the finding at line {self.position(source).start.line})")
            return False
        program = f"to_edge_transform_and_lower({code(func.value)}, partitioner=[XnnpackPartitioner()]).to_executorch().buffer"
        if name == "_save_to_buffer_for_lite_interpreter":
            new = program
            where = "the buffer"
        else:
            path = argument(node, 0, "f")
            if path is None:
                self.report(node, f"`.{name}()` without a path")
                return False
            new = f"pathlib.Path({pte_path(path)}).write_bytes({program})"
            where = f"`{self.shown(path)}`" if pte_path(path) == code(path) else f"`{pte_path(path)}` (was `{self.shown(path)}`)"
        self.report(
            node,
            f"`.{name}(...)` writes a lite-interpreter (PyTorch Mobile) program: lower the `ExportedProgram` to ExecuTorch "
            f"with XNNPACK and write {where}; on devices load it with ExecuTorch's `Module` instead of "
            "`LiteModuleLoader` / `_load_for_mobile` (not rewritten)",
            replacement=cst.parse_expression(new),
            imports=_ET if name != "_save_to_buffer_for_lite_interpreter" else _ET[1:],
            applicability=plan.applicability,
        )
        return True
