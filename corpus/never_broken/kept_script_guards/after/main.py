"""The recipe exported for the C++ runtime, its artifact loaded back, and the eager model."""
import os
import sys
import tempfile

import torch

from recipe import export
from recipe.train import get_params, get_transducer_model


def main(out):
    x = torch.randn(2, 5, 10, generator=torch.Generator().manual_seed(1))
    x_lens = torch.tensor([5, 4])
    with tempfile.TemporaryDirectory() as tmp:
        path = os.path.join(tmp, "cpu_jit.pt")
        export.main(["--filename", path])
        served = torch.jit.load(path)
        logits, lens = served(x, x_lens)
    torch.manual_seed(0)
    eager = get_transducer_model(get_params()).eval()
    eager_logits, _ = eager(x, x_lens)
    torch.save({"served": logits, "lens": lens, "eager": eager_logits}, out)


if __name__ == "__main__":
    main(sys.argv[1])
