"""The export script: traces the detector on one image, as the library's deploy tool does."""

import torch

from detector import TinyDetector
from torch.export import Dim


def export(path: str) -> None:
    torch.manual_seed(0)
    model = TinyDetector().eval()
    example = torch.rand(1, 3, 64, 64)
    with torch.no_grad():
        # ts2export: example doubled where it has size 1, which export would fix, while the model is called at other sizes (dim 0: sizes 1, 2, 4; main.py:16)
        traced = torch.export.export(model, (torch.cat([example] * 2),), dynamic_shapes=({0: Dim.DYNAMIC, 1: Dim.AUTO, 2: Dim.AUTO, 3: Dim.AUTO},))
    torch.export.save(traced, path)
