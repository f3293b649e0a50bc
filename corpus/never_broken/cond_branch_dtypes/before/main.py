"""Scripts the router, ships it, and serves batches that take each branch from the shipped file."""
import sys
from pathlib import Path

import torch

from router import Router


def main(out):
    torch.manual_seed(0)
    path = Path("artifacts") / "router.pt"
    path.parent.mkdir(exist_ok=True)
    torch.jit.save(torch.jit.script(Router().eval()), str(path))
    served = torch.jit.load(str(path))
    batches = [torch.randn(3, 8) + 1.0, torch.randn(5, 8) - 1.0, torch.randn(4, 8) + 2.0]
    with torch.no_grad():
        torch.save([served(b) for b in batches], out)


if __name__ == "__main__":
    main(sys.argv[1])
