"""An iterative refiner written for TorchScript: the number of steps comes from a tensor, a `while`
loop runs until the update is small, and an `if` on a tensor value counts overflows in module state.
None of it can be rewritten safely: ts2export reports each place and leaves the code as it is."""
import torch
from torch import nn


class Refiner(nn.Module):
    def __init__(self):
        super().__init__()
        self.cell = nn.Linear(4, 4)
        self.register_buffer("overflows", torch.zeros((), dtype=torch.long))

    def forward(self, x, steps):
        for _ in range(int(steps.item())):
            x = torch.tanh(self.cell(x))
        delta = x.abs().max()
        while delta > 0.5:
            x = x * 0.5
            delta = delta * 0.5
        if x.norm() > 1.0:
            self.overflows += 1
            x = x / x.norm()
        return x


def inputs():
    torch.manual_seed(2)
    return [(torch.randn(batch, 4) * scale, torch.tensor(steps)) for batch, scale, steps in
            [(1, 0.1, 0), (3, 1.0, 2), (5, 3.0, 4)]]


def build():
    torch.manual_seed(0)
    return Refiner().eval()
