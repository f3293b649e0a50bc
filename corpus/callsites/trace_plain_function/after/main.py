"""A traced plain function (no nn.Module), called at another batch size."""
import sys
import torch
from torch.export import Dim


def gelu_gate(x, gate):
    return torch.nn.functional.gelu(x) * torch.sigmoid(gate)


def main(out):
    torch.manual_seed(0)
    x, g = torch.randn(2, 6), torch.randn(2, 6)
    class FunctionAsModule(torch.nn.Module):
        """A function as `forward`, so that torch.export can export it (added by ts2export)."""

        def __init__(self, fn):
            super().__init__()
            self.fn = fn

        def forward(self, *args):
            return self.fn(*args)

    fused = torch.export.export(FunctionAsModule(gelu_gate), (x, g), dynamic_shapes=(({i: Dim.AUTO for i in range(x.dim())}, {i: Dim.AUTO for i in range(g.dim())}),)).module()
    torch.save([fused(torch.randn(5, 6), torch.randn(5, 6)), fused(x, g)], out)


if __name__ == "__main__":
    main(sys.argv[1])
