"""The kit's tests, run as a program: each passes, and the artifacts they save still load and compute."""
import io
import sys
import tempfile

import torch

from tests import test_color


def main(out):
    test_color.test_rejects_unbatched()
    blob = test_color.test_scriptable()
    case = test_color.TestGamma()
    case.test_rejects_integer_images()
    with tempfile.TemporaryDirectory() as tmp:
        gamma = torch.jit.load(case.test_gamma_jit(tmp))
    test_color.test_posterize_rejects_float()
    test_color.test_posterize_scriptable()
    x = torch.rand(2, 3, 8, 8, generator=torch.Generator().manual_seed(0))
    torch.save({
        "normalized": torch.jit.load(io.BytesIO(blob))(x),
        "gamma": gamma(x),
    }, out)


if __name__ == "__main__":
    main(sys.argv[1])
