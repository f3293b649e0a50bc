import re
from typing import Iterator

from ts2export.rule import Applicability, Invalid, TextFinding, TextRule, Valid

from ._cpp_util import findings

_LOAD = re.compile(r"(?<![\w:])(?:::)?(?:torch\s*::\s*)?jit\s*::\s*(load|_load_for_mobile)\s*\(")


class CppJitLoad(TextRule):
    """
    ## What it does
    Reports C++ calls of `torch::jit::load(...)` and `torch::jit::_load_for_mobile(...)`.

    ## Why
    These load TorchScript files into the TorchScript interpreter (`libtorch`) or the lite
    interpreter. A migrated model is a `torch.export` program, compiled for the target:
    - server / desktop C++: an AOTInductor package, built from the saved artifact with
      `ts2export convert model.pt -o model.pt2 --input ...` then
      `ts2export package model.pt2 -o model_aoti.pt2` (or in Python with
      `torch._inductor.aoti_compile_and_package(ep, package_path="model.pt2")`), loaded with
      `torch::inductor::AOTIModelPackageLoader loader("model_aoti.pt2");` (header
      `torch/csrc/inductor/aoti_package/model_package_loader.h`) and run with
      `std::vector<at::Tensor> out = loader.run(inputs);` where `inputs` is a
      `std::vector<at::Tensor>`;
    - mobile / embedded: an ExecuTorch `.pte`, loaded with the ExecuTorch C++ `Module`
      (`executorch/extension/module/module.h`): `executorch::extension::Module m("model.pte");`
      then `m.forward(inputs)` / `m.execute("forward", inputs)`.

    ## Example
    ```cpp
    torch::jit::script::Module m = torch::jit::load("model.pt");
    at::Tensor y = m.forward({x}).toTensor();
    ```
    becomes, for an AOTInductor package,
    ```cpp
    torch::inductor::AOTIModelPackageLoader loader("model.pt2");
    at::Tensor y = loader.run({x})[0];
    ```

    ## Fix safety
    Report only: C++ sources are not rewritten; the loader also changes the input and output
    types (a vector of tensors instead of `IValue`s), so the calling code changes too.

    Report only.
    """

    id = "TSX801"
    summary = "C++ `torch::jit::load`: load an AOTInductor package or an ExecuTorch .pte instead"
    applicability = Applicability.NONE
    triggers = ("jit::load", "jit::_load_for_mobile")

    VALID = [
        Valid('#include <torch/csrc/inductor/aoti_package/model_package_loader.h>\n'
              'torch::inductor::AOTIModelPackageLoader loader("m.pt2");\n'),
        Valid('// torch::jit::load("old.pt") was used here\nconst char* s = "torch::jit::load(";\n'),
    ]
    INVALID = [
        Invalid('#include <torch/script.h>\nauto m = torch::jit::load(argv[1]);\n', count=1),
        Invalid('using namespace torch;\nauto m = jit::load("m.pt", at::kCPU);\n'
                'auto lite = torch::jit::_load_for_mobile("m.ptl");\n', count=2),
    ]

    def check(self, text: str) -> Iterator[TextFinding]:
        for line, column, m in findings(text, _LOAD):
            if m.group(1) == "_load_for_mobile":
                message = ("`torch::jit::_load_for_mobile` loads a lite-interpreter (.ptl) model; load an ExecuTorch "
                           "`.pte` (`ts2export convert` then `ts2export lower`) with "
                           "`executorch::extension::Module(\"model.pte\")` and call `forward`/`execute`")
            else:
                message = ("`torch::jit::load` loads TorchScript; load an AOTInductor package instead "
                           "(`torch::inductor::AOTIModelPackageLoader(path)`, `.run(std::vector<at::Tensor>)`; build it with "
                           "`ts2export convert` then `ts2export package model.pt2 -o model_aoti.pt2`) or an ExecuTorch .pte "
                           "(`ts2export lower`) with the ExecuTorch C++ `Module`")
            yield TextFinding(line, column, message)
