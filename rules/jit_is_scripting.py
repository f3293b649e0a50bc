import libcst as cst

from ts2export.rule import Applicability, Import, Invalid, Rule, Valid

_NAMES = ("torch.jit.is_scripting", "torch._jit_internal.is_scripting")


class JitIsScripting(Rule):
    """
    ## What it does
    Replaces `torch.jit.is_scripting()` with `torch.compiler.is_exporting()`.

    ## Why
    `torch.jit.is_scripting()` told code whether the TorchScript compiler was compiling it, so a
    model could keep Python-only code (statistics read with `float(...)`, logging, numpy) away from
    the compiler, or keep a scriptable variant beside a Python one. Once the model is exported
    instead of scripted, the compiler that must not see that code is `torch.export`, and
    `torch.compiler.is_exporting()` asks it the same question: the branch TorchScript took is the
    branch export takes. Replacing the call with `False` would keep the Python-only branch, which
    export then traces and stops on (`GuardOnDataDependentSymNode` on a `float(t)`).

    ## Example
    ```python
    def forward(self, x):
        y = self.norm(x)
        if not torch.jit.is_scripting():
            self.stats.append(float(y.std()))
        return y
    ```
    becomes
    ```python
    def forward(self, x):
        y = self.norm(x)
        if not torch.compiler.is_exporting():
            self.stats.append(float(y.std()))
        return y
    ```

    ## Fix safety
    Safe: both return False in eager Python, under `torch.jit.trace` and under `torch.compile`;
    `torch.compiler.is_exporting()` is True inside `torch.export.export` (strict and non-strict),
    where TorchScript's own answer was True (checked on torch 2.13). `torch.compiler.is_compiling()`
    would also be True under `torch.compile`, which ran the Python branch before. A program that still
    scripts the code cannot compile `torch.compiler.is_exporting()`: where an entry point that stays
    TorchScript still compiles the code, the fix is held back (migrate the `torch.jit.script` call
    with it). A trace is not affected (both are False there).
    """

    id = "TSX501"
    summary = ("`torch.jit.is_scripting()` becomes `torch.compiler.is_exporting()` "
               "(the branch TorchScript took is the one export takes)")
    applicability = Applicability.SAFE
    keeps_tracing = True
    export_skips_eager_branch = True

    VALID = [
        Valid("import torch\nif torch.compiler.is_exporting():\n    x = 1\n"),
        Valid("def is_scripting():\n    return True\nif is_scripting():\n    x = 1\n"),
        Valid("import torch\nf = torch.jit.is_tracing()\n"),
    ]
    INVALID = [
        Invalid(
            "import torch\n\n\ndef f(x):\n    if torch.jit.is_scripting():\n        y = x + 1\n"
            "    else:\n        # eager path\n        y = x + 2\n    return torch.relu(y)\n",
            "import torch\n\n\ndef f(x):\n    if torch.compiler.is_exporting():\n        y = x + 1\n"
            "    else:\n        # eager path\n        y = x + 2\n    return torch.relu(y)\n",
        ),
        Invalid(
            "import torch\n\n\ndef f(x):\n    y = x / 2\n    if not torch.jit.is_scripting():\n"
            "        print(float(y.std()))\n    return y\n",
            "import torch\n\n\ndef f(x):\n    y = x / 2\n    if not torch.compiler.is_exporting():\n"
            "        print(float(y.std()))\n    return y\n",
        ),
        Invalid(
            '"""Docstring."""\nfrom torch.jit import is_scripting\n\n\ndef f(x, n):\n    if n > 2 or is_scripting():\n'
            "        x = x + 1\n    return x\n",
            '"""Docstring."""\nimport torch\n\n\ndef f(x, n):\n    if n > 2 or torch.compiler.is_exporting():\n'
            "        x = x + 1\n    return x\n",
        ),
        Invalid(
            "import torch\nys = [y for y in range(3) if not torch.jit.is_scripting()]\n"
            "label = 'ts' if torch.jit.is_scripting() else 'py'\n",
            "import torch\nys = [y for y in range(3) if not torch.compiler.is_exporting()]\n"
            "label = 'ts' if torch.compiler.is_exporting() else 'py'\n",
            count=2,
        ),
    ]

    def visit_Call(self, node: cst.Call) -> None:
        if node.args or not self.matches(node.func, *_NAMES):
            return
        self.report(
            node,
            "`torch.jit.is_scripting()` asked whether TorchScript compiles this code; with torch.export, ask "
            "`torch.compiler.is_exporting()`: the branch TorchScript took is the branch export takes",
            replacement=cst.parse_expression("torch.compiler.is_exporting()"),
            imports=[Import("torch")],
        )
