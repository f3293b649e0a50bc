"""Export step of a small vision service: one image, the way most tutorials trace."""
import os

import torch
from torch import nn
from torch.export import Dim


class TinyClassifier(nn.Module):
    def __init__(self, classes: int = 3):
        super().__init__()
        self.features = nn.Sequential(nn.Conv2d(3, 6, 3, padding=1), nn.BatchNorm2d(6), nn.ReLU(), nn.AdaptiveAvgPool2d(1))
        self.fc = nn.Linear(6, classes)

    def forward(self, image: torch.Tensor) -> torch.Tensor:
        return self.fc(self.features(image).flatten(1))


def export(out_dir: str) -> str:
    model = TinyClassifier().eval()
    example = torch.rand(1, 3, 24, 24)
    # ts2export: the example doubled along its batch dim (size 1, which export would fix): the exported program takes any batch size, as the TorchScript one did; batch-one = "static" under [tool.ts2export] exports batch 1 only
    traced = torch.export.export(model, (torch.cat([example] * 2),), dynamic_shapes=({0: Dim.DYNAMIC, 1: Dim.AUTO, 2: Dim.AUTO, 3: Dim.AUTO},))
    path = os.path.join(out_dir, "classifier.pt")
    torch.export.save(traced, path)
    return path
