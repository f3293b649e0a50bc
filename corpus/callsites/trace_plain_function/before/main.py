"""A traced plain function (no nn.Module), called at another batch size."""
import sys
import torch


def gelu_gate(x, gate):
    return torch.nn.functional.gelu(x) * torch.sigmoid(gate)


def main(out):
    torch.manual_seed(0)
    x, g = torch.randn(2, 6), torch.randn(2, 6)
    fused = torch.jit.trace(gelu_gate, (x, g))
    torch.save([fused(torch.randn(5, 6), torch.randn(5, 6)), fused(x, g)], out)


if __name__ == "__main__":
    main(sys.argv[1])
