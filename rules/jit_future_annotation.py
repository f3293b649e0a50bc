import libcst as cst

from ts2export.rule import Applicability, Invalid, Rule, Valid


class JitFutureAnnotation(Rule):
    """
    ## What it does
    Reports the type `torch.jit.Future` (usually `torch.jit.Future[T]` in an annotation) where
    TSX503 did not rewrite it together with its `torch.jit.fork`.

    ## Why
    `torch.jit.Future[T]` typed the result of `torch.jit.fork` for the TorchScript compiler. Once
    the forks are direct calls (TSX503), the variable holds a `T`, not a future. Where futures
    stay (for instance a helper that receives one), the class is `torch.futures.Future` -- the
    same class (`torch.jit.Future is torch.futures.Future`), without the `torch.jit` dependency.

    ## Example
    ```python
    def gather(futs: List[torch.jit.Future[Tensor]]) -> List[Tensor]:
        return [torch.jit.wait(f) for f in futs]
    ```
    Let the caller pass values (`List[Tensor]`) once its forks are direct calls, or annotate
    `List[torch.futures.Future[Tensor]]` and call `f.wait()` if it really keeps futures.

    ## Fix safety
    Report only: the right type depends on whether the future's producer is rewritten.

    Report only.
    """

    id = "TSX703"
    summary = "`torch.jit.Future[T]`: annotate `T` once forks are direct calls, else `torch.futures.Future[T]`"
    applicability = Applicability.NONE
    triggers = ("Future",)

    VALID = [Valid("import torch\nfrom typing import List\n\n\ndef f(x: List[torch.futures.Future[int]]):\n    return x\n")]
    INVALID = [
        Invalid(
            "import torch\nfrom typing import List\n\n\ndef gather(futs: List[torch.jit.Future[torch.Tensor]]):\n"
            "    return [torch.jit.wait(f) for f in futs]\n",
            count=1,
        ),
        Invalid("from torch.jit import Future\n\n\ndef g(fut: Future):\n    return fut\n", count=1),
    ]

    def _report(self, node: cst.CSTNode) -> None:
        self.report(
            node,
            "`torch.jit.Future` typed a `torch.jit.fork` result for TorchScript: annotate the value type `T` once the "
            "fork is a direct call, or use `torch.futures.Future[T]` (the same class) where a future remains",
        )

    def visit_Subscript(self, node: cst.Subscript) -> None:
        if self.matches(node.value, "torch.jit.Future"):
            self._report(node)

    def visit_Name(self, node: cst.Name) -> None:
        self._bare(node)

    def visit_Attribute(self, node: cst.Attribute) -> None:
        self._bare(node)

    def _bare(self, node: cst.BaseExpression) -> None:
        if not self.matches(node, "torch.jit.Future"):
            return
        parent = self.parent(node)
        if isinstance(parent, cst.Attribute) and (parent.value is node or parent.attr is node):
            return
        if isinstance(parent, cst.Subscript) and parent.value is node:
            return  # reported with the subscript
        if isinstance(parent, (cst.ImportAlias,)):
            return
        self._report(node)
