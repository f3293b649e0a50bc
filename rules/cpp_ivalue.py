import re
from typing import Iterator

from ts2export.rule import Applicability, Invalid, TextFinding, TextRule, Valid

from ._cpp_util import findings

_IVALUE = re.compile(r"(?<![\w])(?:(?:::)?(?:torch\s*::\s*jit|torch|c10|at)\s*::\s*)?IValue\b")


class CppIvalue(TextRule):
    """
    ## What it does
    Reports uses of `IValue` (`torch::jit::IValue`, `c10::IValue`, `at::IValue`, or `IValue`
    under a `using` declaration) in C++ sources: one finding per line.

    ## Why
    `IValue` is the boxed value TorchScript modules take and return (`m.forward(inputs)` with
    `std::vector<torch::jit::IValue> inputs`, `.toTensor()`, `.toTuple()`). The new loaders use
    other types: an AOTInductor package's `run` takes and returns `std::vector<at::Tensor>`
    (nested inputs and outputs are flattened in the order of the exported program's
    `in_spec`/`out_spec`), an ExecuTorch `Module` takes and returns `executorch::runtime::EValue`s.
    The code that packs inputs and unpacks outputs has to change with the loader.

    ## Example
    ```cpp
    std::vector<torch::jit::IValue> inputs{x};
    at::Tensor y = module.forward(inputs).toTensor();
    ```
    becomes, for an AOTInductor package,
    ```cpp
    std::vector<at::Tensor> inputs{x};
    at::Tensor y = loader.run(inputs)[0];
    ```

    ## Fix safety
    Report only: C++ sources are not rewritten.

    Report only.
    """

    id = "TSX804"
    summary = "C++ `torch::jit::IValue`: the new loaders take tensors (AOTInductor) or EValues (ExecuTorch)"
    applicability = Applicability.NONE
    triggers = ("IValue",)

    VALID = [
        Valid("std::vector<at::Tensor> inputs{x};\n// IValue was used here\nauto s = \"IValue\";\n"),
        Valid("struct MyIValueLike {};\n"),
    ]
    INVALID = [
        Invalid("std::vector<torch::jit::IValue> in{x};\nc10::IValue out = m.forward(in);\n", count=2),
        Invalid("using torch::jit::IValue;\nIValue a, b; IValue c;\n", count=2),
    ]

    def check(self, text: str) -> Iterator[TextFinding]:
        seen: set[int] = set()
        for line, column, m in findings(text, _IVALUE):
            if line in seen:
                continue
            seen.add(line)
            shown = re.sub(r"\s+", "", m.group(0))
            yield TextFinding(
                line, column,
                f"`{shown}` is TorchScript's boxed value; AOTInductor's "
                "`AOTIModelPackageLoader::run` takes and returns `std::vector<at::Tensor>` (flattened inputs/outputs), "
                "ExecuTorch's `Module` uses `EValue`: rewrite the input packing and output unpacking",
            )
