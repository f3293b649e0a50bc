"""A feature normalizer written in the old ScriptModule style, saved through its own `.save`."""
from pathlib import Path

import torch
from torch.export import Dim


class Normalizer(torch.nn.Module):
    def __init__(self, mean: torch.Tensor, std: torch.Tensor):
        super().__init__()
        self.register_buffer("mean", mean)
        self.register_buffer("std", std)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return (x - self.mean) / self.std.clamp(min=1e-3)


def fit_and_save(data: torch.Tensor, folder: Path) -> Path:
    norm = Normalizer(data.mean(0), data.std(0))
    target = folder / "normalizer.pt"
    torch.export.save(torch.export.export(norm, (torch.ones(4, 5),), dynamic_shapes=({0: Dim.DYNAMIC, 1: Dim.AUTO},)), str(target))
    return target
