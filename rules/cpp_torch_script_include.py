import re
from typing import Iterator

from ts2export.rule import Applicability, Invalid, TextFinding, TextRule, Valid

from ._cpp_util import mask

_INCLUDE = re.compile(r'^[ \t]*#[ \t]*include[ \t]*[<"](torch/script\.h|torch/csrc/jit/[^>"]*)[>"]', re.MULTILINE)


class CppTorchScriptInclude(TextRule):
    """
    ## What it does
    Reports `#include <torch/script.h>` and includes of TorchScript internals
    (`torch/csrc/jit/...`).

    ## Why
    The header pulls in the TorchScript runtime; a source that includes it is a TorchScript
    loader or extension. After migration, AOTInductor packages need
    `torch/csrc/inductor/aoti_package/model_package_loader.h` (and the headers of `at::Tensor`,
    e.g. `ATen/ATen.h` or `torch/torch.h`), ExecuTorch needs `executorch/extension/module/module.h`
    and `executorch/extension/tensor/tensor.h`.

    ## Example
    ```cpp
    #include <torch/script.h>
    ```
    becomes
    ```cpp
    #include <torch/csrc/inductor/aoti_package/model_package_loader.h>
    ```

    ## Fix safety
    Report only: C++ sources are not rewritten.

    Report only.
    """

    id = "TSX803"
    summary = "C++ `#include <torch/script.h>`: include the AOTInductor or ExecuTorch loader headers instead"
    applicability = Applicability.NONE
    triggers = ("torch/script.h", "torch/csrc/jit/")

    VALID = [
        Valid("#include <torch/torch.h>\n// #include <torch/script.h>\n"),
        Valid('/*\n#include <torch/script.h>\n*/\nint x;\n'),
    ]
    INVALID = [
        Invalid('#include <torch/script.h>\n#include "torch/csrc/jit/serialization/import.h"\n', count=2),
    ]

    def check(self, text: str) -> Iterator[TextFinding]:
        code = mask(text)
        for m in _INCLUDE.finditer(text):
            start = m.start()
            hash_at = text.index("#", start)
            if code[hash_at] != "#":  # inside a comment
                continue
            line = text.count("\n", 0, start) + 1
            column = hash_at - (text.rfind("\n", 0, hash_at) + 1) + 1
            header = m.group(1)
            yield TextFinding(
                line, column,
                f"`#include <{header}>` pulls in the TorchScript runtime; include "
                "`torch/csrc/inductor/aoti_package/model_package_loader.h` (AOTInductor) or "
                "`executorch/extension/module/module.h` (ExecuTorch) for the new loader",
            )
