import re
from typing import Iterator

from ts2export.rule import Applicability, Invalid, TextFinding, TextRule, Valid

from ._cpp_util import findings

_MODULE = re.compile(r"(?<![\w:])(?:::)?(?:torch\s*::\s*)?jit\s*::\s*(?:script\s*::\s*)?(Module|mobile\s*::\s*Module)\b")


class CppJitModule(TextRule):
    """
    ## What it does
    Reports the C++ types `torch::jit::script::Module`, `torch::jit::Module` and
    `torch::jit::mobile::Module`.

    ## Why
    A variable, member or parameter of these types holds a TorchScript model; every function
    that takes one must change when the loader changes (see TSX801). The replacements are
    `torch::inductor::AOTIModelPackageLoader` (AOTInductor package: `run(std::vector<at::Tensor>)`
    returns `std::vector<at::Tensor>`) or `executorch::extension::Module` (ExecuTorch `.pte`:
    `forward`/`execute` take and return `EValue`s).

    ## Example
    ```cpp
    class Predictor {
      torch::jit::script::Module model_;
    };
    ```
    becomes
    ```cpp
    class Predictor {
      std::unique_ptr<torch::inductor::AOTIModelPackageLoader> model_;
    };
    ```

    ## Fix safety
    Report only: C++ sources are not rewritten.

    Report only.
    """

    id = "TSX802"
    summary = "C++ `torch::jit::script::Module`: hold an AOTIModelPackageLoader or an ExecuTorch Module instead"
    applicability = Applicability.NONE
    triggers = ("jit::",)

    VALID = [
        Valid("torch::nn::Module net;\nexecutorch::extension::Module m(\"m.pte\");\n"),
        Valid("/* torch::jit::script::Module m; */\n"),
    ]
    INVALID = [
        Invalid("void run(torch::jit::script::Module& m);\n", count=1),
        Invalid("struct P {\n  torch::jit::Module a;\n  torch::jit::mobile::Module b;\n};\n", count=2),
    ]

    def check(self, text: str) -> Iterator[TextFinding]:
        for line, column, m in findings(text, _MODULE):
            kind = "mobile::Module" if "mobile" in m.group(1) else "Module"
            target = ("`executorch::extension::Module` (ExecuTorch .pte from `ts2export lower`)" if kind == "mobile::Module" else
                      "`torch::inductor::AOTIModelPackageLoader` (AOTInductor .pt2 from `ts2export package`, "
                      "`run(std::vector<at::Tensor>)`) or `executorch::extension::Module` (ExecuTorch .pte from `ts2export lower`)")
            shown = re.sub(r"\s+", "", m.group(0))
            yield TextFinding(line, column, f"`{shown}` holds a TorchScript model; hold {target} instead")
