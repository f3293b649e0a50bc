from pathlib import Path

import torch

from head import DetectionHead
from torch.export import Dim


def export(folder: Path) -> Path:
    torch.manual_seed(0)
    head = DetectionHead().eval()
    scripted = torch.export.export(head, (torch.ones(5, 8),), dynamic_shapes=({0: Dim.AUTO, 1: Dim.AUTO},))
    target = folder / "head.pt"
    torch.export.save(scripted, str(target))
    return target
