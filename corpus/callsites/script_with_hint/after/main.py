"""A scripted module has no example inputs in the program; a hint comment gives them."""
import sys

import torch
from torch import nn
from torch.export import Dim


class Denoiser(nn.Module):
    def __init__(self):
        super().__init__()
        self.encode = nn.Linear(12, 24)
        self.decode = nn.Linear(24, 12)

    def forward(self, x, noise_level: float = 0.1):
        return x - noise_level * self.decode(torch.tanh(self.encode(x)))


def export_model(path):
    torch.manual_seed(0)
    model = Denoiser().eval()
    # ts2export: inputs=(torch.randn(4, 12),)
    scripted = torch.export.export(model, (torch.randn(4, 12),), dynamic_shapes=({0: Dim.DYNAMIC, 1: Dim.AUTO},))
    torch.export.save(scripted, path)


def main(out):
    export_model("denoiser.pt")
    model = torch.export.load("denoiser.pt").module()
    torch.manual_seed(1)
    outputs = [model(torch.randn(batch, 12)) for batch in (4, 9, 2)]
    torch.save(outputs, out)


if __name__ == "__main__":
    main(sys.argv[1])
