from ts2export.rule import Applicability, Invalid, Valid

from ._runtime_util import KnobRule


class JitFuserContext(KnobRule):
    """
    ## What it does
    Removes the context manager `torch.jit.fuser(name)`: a `with` statement with only this item is
    replaced by its body (un-indented into the enclosing block); with other items, only this item
    is dropped.

    ## Why
    `torch.jit.fuser("fuser0" | "fuser1" | "fuser2" | "fuser3" | "none")` switched the fusion
    backend of TorchScript's profiling executor for the duration of the block. It sets only
    `torch._C._jit_*` flags, which eager Python, `torch.compile` (Inductor) and `torch.export`
    never read (checked on torch 2.13). The compiler of the new stack chooses its own fusion
    (`torch.compile(mode=...)`, AOTInductor, ExecuTorch delegates).

    ## Example
    ```python
    with torch.jit.fuser("fuser1"):
        y = model(x)
    ```
    becomes
    ```python
    y = model(x)
    ```

    ## Fix safety
    Safe: outside TorchScript the block computes the same thing with or without the context
    manager. A program that still runs TorchScript in this block (a `torch.jit.load`ed or scripted
    model) now uses the default fuser: results agree up to the rounding of fused kernels and the
    speed may differ. A `with ... as name:` item is reported, not removed.

    The setting only changes how TorchScript runs code, never what it computes: it is written
    even where TorchScript still runs.
    """

    id = "TSX603"
    summary = "`with torch.jit.fuser(...)`: TorchScript fuser choice, meaningless after migration"
    applicability = Applicability.SAFE
    CONTEXT_MANAGERS = ("torch.jit.fuser", "torch.jit._fuser.fuser")

    VALID = [
        Valid("import contextlib\nwith contextlib.nullcontext():\n    y = 1\n"),
    ]
    INVALID = [
        Invalid(
            "import torch\n\n\ndef run(m, x):\n    # fuse with NNC\n    with torch.jit.fuser('fuser1'):\n"
            "        y = m(x)\n        y = torch.relu(y)\n    return y\n",
            "import torch\n\n\ndef run(m, x):\n    # fuse with NNC\n    y = m(x)\n    y = torch.relu(y)\n    return y\n",
        ),
        Invalid(
            "import torch\n\n\ndef run(m, x):\n    with torch.no_grad(), torch.jit.fuser('fuser2'):\n        return m(x)\n",
            "import torch\n\n\ndef run(m, x):\n    with torch.no_grad():\n        return m(x)\n",
        ),
        Invalid(
            "import torch\n\n\ndef run(m, x):\n    with torch.jit.fuser('fuser0'), torch.no_grad():\n        return m(x)\n",
            "import torch\n\n\ndef run(m, x):\n    with torch.no_grad():\n        return m(x)\n",
        ),
        Invalid("import torch\nwith torch.jit.fuser('fuser1') as f:\n    print(f)\n", count=1),
    ]
