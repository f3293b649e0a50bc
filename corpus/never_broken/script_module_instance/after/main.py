"""Build the scaler, ship it as a file, and check the shipped file computes what the object does."""
import sys
from pathlib import Path

import torch

from scaler import Scaler
from torch.export import Dim


def ship(path: Path) -> Scaler:
    scaler = Scaler(0.5)
    torch.export.save(torch.export.export(scaler, (torch.ones(4, 6),), dynamic_shapes=({0: Dim.AUTO, 1: Dim.AUTO},)), str(path))
    return scaler


def main(out):
    path = Path("artifacts") / "scaler.pt"
    path.parent.mkdir(exist_ok=True)
    scaler = ship(path)
    shipped = torch.export.load(str(path)).module()
    torch.manual_seed(0)
    x = torch.randn(4, 6)
    torch.save({"object": scaler(x), "shipped": shipped(x)}, out)


if __name__ == "__main__":
    main(sys.argv[1])
