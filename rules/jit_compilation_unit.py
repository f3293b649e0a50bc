import libcst as cst

from ts2export.rule import Applicability, Invalid, Rule, Valid

_NAMES = ("torch.jit.CompilationUnit", "torch._C.CompilationUnit", "torch.jit._script.CompilationUnit")


class JitCompilationUnit(Rule):
    """
    ## What it does
    Reports `torch.jit.CompilationUnit(...)`.

    ## Why
    A `CompilationUnit` compiles TorchScript source held in strings at run time
    (`cu = torch.jit.CompilationUnit("def f(x): ...")`, then `cu.f(x)`). Nothing replaces it in
    the new stack, and the functions inside the strings are invisible to linters, type checkers
    and to ts2export itself.

    ## Example
    ```python
    cu = torch.jit.CompilationUnit('''
    def scale(x: torch.Tensor, k: float) -> torch.Tensor:
        return x * k
    ''')
    y = cu.scale(x, 2.0)
    ```
    Move the functions into the module as ordinary Python (`def scale(x, k): return x * k`) and
    call them directly; `torch.export` traces them as part of the model.

    ## Fix safety
    Report only: the source strings may be built at run time, and the calls through the unit
    (`cu.scale`) can be anywhere.

    Report only. Left in code that an entry point exports, it holds that entry point back.
    """

    id = "TSX701"
    summary = "`torch.jit.CompilationUnit`: TorchScript compiled from strings; write the functions as Python"
    applicability = Applicability.NONE
    blocks_export = True

    VALID = [Valid("import torch\ndef scale(x, k):\n    return x * k\n")]
    INVALID = [
        Invalid("import torch\ncu = torch.jit.CompilationUnit('def f(x):\\n    return x + 1\\n')\ny = cu.f(torch.ones(1))\n", count=1),
        Invalid("from torch.jit import CompilationUnit\n\n\ndef build(src: str):\n    return CompilationUnit(src)\n", count=1),
    ]

    def visit_Call(self, node: cst.Call) -> None:
        if self.matches(node.func, *_NAMES):
            self.report(
                node,
                "`torch.jit.CompilationUnit(...)` compiles TorchScript from source strings; move the functions into "
                "the module as ordinary Python `def`s and call them directly (torch.export traces them)",
            )
