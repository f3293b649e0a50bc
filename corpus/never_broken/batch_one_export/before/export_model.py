"""The export script: traces the detector on one image, as the library's deploy tool does."""

import torch

from detector import TinyDetector


def export(path: str) -> None:
    torch.manual_seed(0)
    model = TinyDetector().eval()
    example = torch.rand(1, 3, 64, 64)
    with torch.no_grad():
        traced = torch.jit.trace(model, example)
    traced.save(path)
