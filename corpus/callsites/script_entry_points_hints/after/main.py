"""A scripted module offers an extra entry point (`@torch.jit.export def embed`) that the reader of
the saved artifact calls; hint comments give the inputs of forward and of embed."""
import sys

import torch
from torch import nn
from torch.export import Dim
from torch.export.pt2_archive._package import load_pt2, package_pt2


class Embedder(nn.Module):
    def __init__(self):
        super().__init__()
        self.proj = nn.Linear(6, 3)

    def forward(self, x):
        return self.proj(x).softmax(-1)

    @torch.jit.export
    def embed(self, x):
        return self.proj(x)


def main(out):
    torch.manual_seed(0)
    model = Embedder().eval()
    # ts2export: inputs=(torch.ones(2, 6),)
    # ts2export: inputs.embed=(torch.ones(3, 6),)
    class MethodAsModule(torch.nn.Module):
        """One method of a module as `forward`, so that torch.export can export it (added by ts2export)."""

        def __init__(self, module, method):
            super().__init__()
            self.module = module
            self.method = method

        def forward(self, *args):
            return getattr(self.module, self.method)(*args)

    scripted = {"model": torch.export.export(model, (torch.ones(2, 6),), dynamic_shapes=({0: Dim.AUTO, 1: Dim.AUTO},)), "embed": torch.export.export(MethodAsModule(model, "embed"), (torch.ones(3, 6),), dynamic_shapes=(({0: Dim.AUTO, 1: Dim.AUTO},),))}
    package_pt2("embedder.pt", exported_programs=scripted)
    served = {name: ep.module() for name, ep in load_pt2("embedder.pt").exported_programs.items()}
    x = torch.randn(4, 6)
    torch.save({"probs": served["model"](x), "embedding": served["embed"](x)}, out)


if __name__ == "__main__":
    main(sys.argv[1])
