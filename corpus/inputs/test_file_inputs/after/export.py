"""Script the detector for the serving fleet (nothing here shows its inputs)."""
import torch

from detector import EdgeDetector
from torch.export import Dim


def export(path: str) -> None:
    torch.manual_seed(0)
    torch.export.save(torch.export.export(EdgeDetector().eval(), (torch.ones(2, 1, 16, 16),), dynamic_shapes=({0: Dim.DYNAMIC, 1: Dim.AUTO, 2: Dim.DYNAMIC, 3: Dim.DYNAMIC},)), path)
