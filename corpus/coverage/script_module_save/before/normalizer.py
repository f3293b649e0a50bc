"""A feature normalizer written in the old ScriptModule style, saved through its own `.save`."""
from pathlib import Path

import torch


class Normalizer(torch.jit.ScriptModule):
    def __init__(self, mean: torch.Tensor, std: torch.Tensor):
        super().__init__()
        self.register_buffer("mean", mean)
        self.register_buffer("std", std)

    @torch.jit.script_method
    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return (x - self.mean) / self.std.clamp(min=1e-3)


def fit_and_save(data: torch.Tensor, folder: Path) -> Path:
    norm = Normalizer(data.mean(0), data.std(0))
    target = folder / "normalizer.pt"
    norm.save(str(target))
    return target
