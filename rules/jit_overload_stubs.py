import libcst as cst

from ts2export.rule import Applicability, Edit, Invalid, Rule, Valid

from ts2export.rules._catalog_types_util import decorator_target

_TYPING_OVERLOAD = ("typing.overload", "typing_extensions.overload")
_OVERLOADS = ("torch.jit._overload", "torch.jit._overload_method", "torch._jit_internal._overload",
              "torch._jit_internal._overload_method")


class JitOverloadStubs(Rule):
    """
    ## What it does
    Deletes the stubs decorated with `@torch.jit._overload` / `@torch.jit._overload_method`
    (with their `# type:` comments) and keeps the implementation that follows them. A stub that is
    also a `@typing.overload` stub keeps serving type checkers: only the TorchScript decorator
    goes.

    ## Why
    TorchScript has no `Union` dispatch, so a function taking `int` or `Tensor` was declared as
    several typed stubs followed by one implementation; the compiler compiled the implementation
    once per stub. In eager Python the last definition of the name wins, so the stubs never run;
    they only keep `torch.jit` alive. (`typing.overload` is the Python equivalent if you want the
    signatures for a type checker.)

    ## Example
    ```python
    @torch.jit._overload
    def scale(x, s):  # type: (Tensor, float) -> Tensor
        pass

    @torch.jit._overload
    def scale(x, s):  # type: (Tensor, Tensor) -> Tensor
        pass

    def scale(x, s):
        return x * s
    ```
    becomes
    ```python
    def scale(x, s):
        return x * s
    ```

    ## Fix safety
    Unsafe. Eager Python is unchanged: the implementation rebinds the name before anything can
    call a stub. But code that is still compiled by TorchScript needs the stubs: without them a
    scripted caller that passes an `int` where another passes a `float` no longer compiles
    (verified in torch 2.13). Apply it together with the removal of the scripting (TSX105, TSX107
    and the call-site rules), as `apply --unsafe-fixes` does. A stub with no implementation right
    after it is reported without a fix.

    Where an entry point that stays TorchScript still compiles the class, the fix is held back:
    TorchScript needs the stubs to resolve the overloads. A trace runs the implementation and is
    not affected.
    """

    id = "TSX104"
    summary = "`@torch.jit._overload` / `_overload_method` stubs are dead code outside TorchScript"
    applicability = Applicability.UNSAFE
    keeps_tracing = True

    VALID = [
        Valid("from typing import overload\n\n\n@overload\ndef f(x: int) -> int: ...\ndef f(x):\n    return x\n"),
    ]
    INVALID = [
        Invalid(
            "import torch\n\n\n@torch.jit._overload\ndef scale(x, s):  # type: (Tensor, float) -> Tensor\n    pass\n\n\n"
            "@torch.jit._overload\ndef scale(x, s):  # type: (Tensor, Tensor) -> Tensor\n    pass\n\n\n"
            "def scale(x, s):\n    return x * s\n",
            "def scale(x, s):\n    return x * s\n",
            unsafe=True,
            count=2,
        ),
        Invalid(
            "import torch\n\n\nclass M(torch.nn.Module):\n    @torch.jit._overload_method  # noqa: F811\n"
            "    def forward(self, x):\n        # type: (int) -> int\n        pass\n\n"
            "    def forward(self, x):\n        return x\n",
            "import torch\n\n\nclass M(torch.nn.Module):\n    def forward(self, x):\n        return x\n",
            unsafe=True,
        ),
        Invalid(
            "import torch\nfrom typing import overload\n\n\nclass M(torch.nn.Module):\n    @overload\n"
            "    @torch.jit._overload_method\n    def forward(self, x: int) -> int:\n        pass\n\n"
            "    def forward(self, x):\n        return x\n",
            "import torch\nfrom typing import overload\n\n\nclass M(torch.nn.Module):\n    @overload\n"
            "    def forward(self, x: int) -> int:\n        pass\n\n"
            "    def forward(self, x):\n        return x\n",
            unsafe=True,
        ),
        Invalid(
            "import torch\n\n\n@torch.jit._overload\ndef lonely(x):  # type: (int) -> int\n    pass\n",
            None,
            count=1,
        ),
    ]

    def visit_FunctionDef(self, node: cst.FunctionDef) -> None:
        decorator = next((d for d in node.decorators if self.matches(decorator_target(d), *_OVERLOADS)), None)
        if decorator is None:
            return
        short = "_overload_method" if "method" in (self.matches(decorator_target(decorator), *_OVERLOADS) or "") else "_overload"
        block = self.parent(node)
        body = list(getattr(block, "body", ()))
        index = next((i for i, s in enumerate(body) if s is node), None)
        if index is None:
            return
        # The group: consecutive stubs of this name around `node`, then the implementation.
        first = index
        while first > 0 and self._is_stub(body[first - 1], node.name.value):
            first -= 1
        last = index
        while last + 1 < len(body) and self._is_stub(body[last + 1], node.name.value):
            last += 1
        impl = body[last + 1] if last + 1 < len(body) else None
        if not (isinstance(impl, cst.FunctionDef) and impl.name.value == node.name.value):
            self.report(
                decorator,
                f"`@torch.jit.{short}` stub `{node.name.value}` is not followed by its implementation; "
                "write the implementation (one `def` that handles every overload) and delete the stubs",
                applicability=Applicability.NONE,
            )
            return
        if self._typed(node):
            # Also a `typing.overload` stub: it still serves type checkers; only the TorchScript
            # decorator goes.
            self.report(
                decorator,
                f"`@torch.jit.{short}` on a `typing.overload` stub of `{node.name.value}` only declared the "
                "overload to TorchScript; remove the decorator once nothing scripts the code (the "
                "`@overload` stays for type checkers)",
                replacement=cst.RemovalSentinel.REMOVE,
            )
            return
        stubs = body[first:last + 1]
        if any(self._typed(stub) for stub in stubs):
            # Mixed group: delete only this stub; the typed ones stay where they are.
            edits = [Edit(node, cst.RemovalSentinel.REMOVE)]
        else:
            # Delete the whole group; the implementation takes the first stub's blank lines.
            kept_comments = [line for line in impl.leading_lines if line.comment is not None]
            edits = [Edit(stub, cst.RemovalSentinel.REMOVE) for stub in stubs]
            edits.append(Edit(impl, impl.with_changes(leading_lines=[*stubs[0].leading_lines, *kept_comments])))
        self.report(
            decorator,
            f"`@torch.jit.{short}` stub of `{node.name.value}` is dead in eager Python (the implementation that "
            "follows rebinds the name); delete the stub once nothing scripts the code",
            edits=edits,
        )

    def _is_stub(self, stmt: cst.CSTNode, name: str) -> bool:
        return (
            isinstance(stmt, cst.FunctionDef)
            and stmt.name.value == name
            and any(self.matches(decorator_target(d), *_OVERLOADS) for d in stmt.decorators)
        )

    def _typed(self, stmt: cst.FunctionDef) -> bool:
        """Whether the stub is also a `typing.overload` stub."""
        return any(self.matches(decorator_target(d), *_TYPING_OVERLOAD) for d in stmt.decorators)
