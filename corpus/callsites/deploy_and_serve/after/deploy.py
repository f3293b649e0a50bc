"""Deploy script: trace the classifier and write the artifact with its metadata."""
import json

import torch
from torch import nn
from torch.export import Dim

ARTIFACT = "classifier.pt"


class Classifier(nn.Module):
    def __init__(self):
        super().__init__()
        self.body = nn.Sequential(nn.Conv2d(3, 8, 3, padding=1), nn.ReLU(), nn.AdaptiveAvgPool2d(1), nn.Flatten())
        self.head = nn.Linear(8, 5)

    def forward(self, images):
        return self.head(self.body(images)).softmax(-1)


def deploy():
    torch.manual_seed(0)
    model = Classifier().eval()
    example = torch.randn(2, 3, 16, 16)
    traced = torch.export.export(model, (example,), dynamic_shapes=({0: Dim.DYNAMIC, 1: Dim.AUTO, 2: Dim.DYNAMIC, 3: Dim.DYNAMIC},))
    meta = {"labels.json": json.dumps(["a", "b", "c", "d", "e"])}
    torch.export.save(traced, ARTIFACT, extra_files=meta)
