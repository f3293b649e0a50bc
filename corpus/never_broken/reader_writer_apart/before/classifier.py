"""The digit classifier, its feature head, and a sequence encoder, built from a config like the
training code does."""
import torch
from torch import nn


class Classifier(nn.Module):
    def __init__(self, num_classes: int, width: int = 16):
        super().__init__()
        self.features = nn.Sequential(
            nn.Conv2d(3, 8, 3, padding=1), nn.ReLU(), nn.AdaptiveAvgPool2d(2), nn.Flatten(),
            nn.Linear(32, width), nn.ReLU(),
        )
        self.head = nn.Linear(width, num_classes)

    def forward(self, images: torch.Tensor) -> torch.Tensor:
        return self.head(self.features(images))


class StrokeEncoder(nn.Module):
    def __init__(self, dim: int = 8):
        super().__init__()
        self.rnn = nn.GRU(dim, dim, batch_first=True)

    def forward(self, strokes: torch.Tensor) -> torch.Tensor:
        return self.rnn(strokes)[0].mean(1)


def build_classifier(num_classes: int) -> Classifier:
    torch.manual_seed(0)
    return Classifier(num_classes)
