"""Script the detector for the serving fleet (nothing here shows its inputs)."""
import torch

from detector import EdgeDetector


def export(path: str) -> None:
    torch.manual_seed(0)
    torch.jit.script(EdgeDetector().eval()).save(path)
