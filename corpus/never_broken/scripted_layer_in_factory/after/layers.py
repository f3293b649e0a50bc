import torch
from torch import nn


class Flatten(nn.Module):
    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return x.flatten(1)


def build(scripted_layer: bool = True) -> nn.Module:
    # a layer scripted inside the factory (einops' tests build their models this way)
    # ts2export: `torch.jit.script(Flatten())` only sped up the calls below; the module runs eager (torch.compile(Flatten()) compiles it again)
    flatten = Flatten() if scripted_layer else Flatten()
    return nn.Sequential(nn.Conv2d(3, 4, 3), nn.ReLU(), flatten, nn.Linear(4 * 6 * 6, 5))


class WithFrozenHead(nn.Module):
    """A module that loads a TorchScript head made elsewhere in its constructor."""

    def __init__(self, head_path: str):
        super().__init__()
        self.body = nn.Linear(8, 8)
        self.head = torch.jit.load(head_path)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.head(self.body(x).relu())
