"""Scripts the gate, ships it, and serves batches that take each branch from the shipped file."""
import sys
from pathlib import Path

import torch

from gate import Gate


def main(out):
    torch.manual_seed(0)
    path = Path("artifacts") / "gate.pt"
    path.parent.mkdir(exist_ok=True)
    torch.export.save(torch.export.export(Gate().eval(), (torch.ones(3, 8),), dynamic_shapes=({0: torch.export.Dim("x_dim0", max=64)},)), str(path))
    served = torch.export.load(str(path)).module()
    batches = [torch.randn(3, 8) + 1.0, torch.randn(5, 8) - 1.0, torch.randn(3, 8) - 2.0]
    with torch.no_grad():
        torch.save([served(b) for b in batches], out)


if __name__ == "__main__":
    main(sys.argv[1])
