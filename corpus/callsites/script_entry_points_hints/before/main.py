"""A scripted module offers an extra entry point (`@torch.jit.export def embed`) that the reader of
the saved artifact calls; hint comments give the inputs of forward and of embed."""
import sys

import torch
from torch import nn


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
    scripted = torch.jit.script(model)
    scripted.save("embedder.pt")
    served = torch.jit.load("embedder.pt")
    x = torch.randn(4, 6)
    torch.save({"probs": served(x), "embedding": served.embed(x)}, out)


if __name__ == "__main__":
    main(sys.argv[1])
