from __future__ import annotations

import libcst as cst

from ts2export.rule import Applicability, Invalid, Rule, Valid


class JitTorchbindClasses(Rule):
    """
    ## What it does
    Reports uses of TorchBind classes (`torch.classes.<namespace>.<Class>`), and the
    `torch.ops.load_library(...)` calls of the same file that load the library registering them.

    ## Why
    TorchBind classes are C++ objects registered for TorchScript (`torch::class_<...>`). A model
    that holds or calls one cannot be exported as it is:
    - `torch.export` traces a TorchBind object through a fake (Python) twin: the C++ class must
      define `__obj_flatten__`, the twin is registered with
      `@torch._library.register_fake_class("<namespace>::<Class>")` (with `__obj_unflatten__`),
      and the custom ops that take the object need fake kernels too (torch 2.13,
      `torch._library.fake_class_registry`);
    - ExecuTorch programs cannot hold TorchBind objects (executorch 1.5.1's emitter raises
      "Custom class ... is not supported in EXIR" unless a backend delegate consumes the object
      while lowering): move the state into tensors (buffers) and the methods into custom
      operators (`torch.library.custom_op`) with an ExecuTorch kernel.

    ## Example
    ```python
    torch.ops.load_library("libtokenizer.so")
    tok = torch.classes.text.Tokenizer(vocab_path)
    ```
    is reported: register a fake class for `text::Tokenizer` to export, or keep tokenisation
    outside the exported model.

    ## Fix safety
    Report only: the replacement depends on what the C++ class does.

    Report only. Left in code that an entry point exports, it holds that entry point back.
    """

    id = "TSX702"
    summary = "TorchBind class (`torch.classes.*`): needs a fake class to export, unsupported by ExecuTorch"
    applicability = Applicability.NONE
    blocks_export = True
    triggers = ("torch.classes", "classes.")

    VALID = [
        Valid("import torch\ntorch.ops.load_library('libmyops.so')\ny = torch.ops.myops.add(torch.ones(1))\n"),
        Valid("classes = {}\nx = classes.get('a')\n"),
    ]
    INVALID = [
        Invalid("import torch\nq = torch.classes.my_ns.Queue(4)\n", count=1),
        Invalid(
            "import torch\ntorch.ops.load_library('libtok.so')\n\n\nclass M(torch.nn.Module):\n"
            "    def __init__(self):\n        super().__init__()\n        self.tok = torch.classes.text.Tokenizer('v.txt')\n",
            count=2,
        ),
    ]

    def __init__(self, context) -> None:
        super().__init__(context)
        self._libraries: list[cst.Call] = []
        self._classes: list[str] = []

    def visit_Attribute(self, node: cst.Attribute) -> None:
        if not self.may_be_named(node, ("torch.classes",), prefix=True):
            return  # (before asking for the parent: most files this rule visits hold no such name)
        parent = self.parent(node)
        if isinstance(parent, cst.Attribute) and parent.value is node:
            return  # report the outermost attribute only
        name = self.matches_prefix(node, "torch.classes")
        if not name or name == "torch.classes" or self.in_import(node):
            return
        cls = name[len("torch.classes."):]
        self._classes.append(cls.replace(".", "::", 1))
        ns_cls = cls.replace(".", "::", 1)
        self.report(
            node,
            f"TorchBind class `torch.classes.{cls}`: torch.export needs `__obj_flatten__` on the C++ class and a fake "
            f"class (`@torch._library.register_fake_class(\"{ns_cls}\")`), ExecuTorch cannot hold it; move its state into "
            "tensors and its methods into custom ops, or keep it outside the exported model",
        )

    def visit_Call(self, node: cst.Call) -> None:
        if self.matches(node.func, "torch.ops.load_library"):
            self._libraries.append(node)

    def leave_Module(self, original_node: cst.Module) -> None:
        if not self._classes:
            return
        shown = ", ".join(f"`{c}`" for c in sorted(set(self._classes)))
        for call in self._libraries:
            self.report(
                call,
                f"`torch.ops.load_library(...)` registers the TorchBind classes used in this file ({shown}); "
                "register a fake class for each to export, or replace them by tensors and custom ops for ExecuTorch",
            )
