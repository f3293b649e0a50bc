"""A gated block written for TorchScript: three `if`s on tensor values that torch.jit.script compiled
into real branches, one `if` on a shape, and a helper exported to TorchScript with @torch.jit.export."""
import torch
from torch import nn


class Gate(nn.Module):
    def __init__(self):
        super().__init__()
        self.pos = nn.Linear(8, 8)
        self.neg = nn.Linear(8, 8)
        self.head = nn.Linear(8, 4)
        self.register_buffer("limit", torch.tensor(4.0))

    def forward(self, x):
        if x.dim() == 3:  # a sequence: pool it (a shape condition, export handles it)
            x = x.mean(1)
        if x.sum() > 0:
            h = self.pos(x)
            gate = torch.sigmoid(h)
        else:
            h = self.neg(x)
            gate = torch.tanh(h)
        scale = h.abs().max()
        if scale.item() > 4.0:
            h = h / scale * self.limit
        return self.finish(h * gate, x)

    @torch.jit.export
    def finish(self, h, x):
        if bool((x < 0).all()):
            return self.head(-h)
        out = self.head(h)
        return torch.relu(out)


def inputs():
    """Inputs that take every branch, at several batch sizes."""
    torch.manual_seed(1)
    cases = {}
    for batch in (1, 3, 6):
        base = torch.rand(batch, 8)
        cases[f"pos_small_{batch}"] = base * 0.1
        cases[f"pos_large_{batch}"] = base * 50.0
        cases[f"mixed_{batch}"] = base - 0.6
        cases[f"all_neg_{batch}"] = -base - 0.1
        cases[f"neg_large_{batch}"] = -base * 50.0 - 1.0
        cases[f"seq_{batch}"] = torch.randn(batch, 5, 8)
    return cases


def build():
    torch.manual_seed(0)
    return Gate().eval()
