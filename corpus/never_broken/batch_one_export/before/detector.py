"""A single-stage detector's network in the shape of a detection library: a conv backbone, then a
head of box deltas and class logits per anchor (the post-processing runs outside the model)."""

import torch
from torch import nn


class TinyDetector(nn.Module):
    def __init__(self, classes: int = 3, anchors: int = 2):
        super().__init__()
        self.anchors = anchors
        self.backbone = nn.Sequential(
            nn.Conv2d(3, 8, 3, stride=2, padding=1), nn.ReLU(),
            nn.Conv2d(8, 16, 3, stride=2, padding=1), nn.ReLU(),
        )
        self.boxes = nn.Conv2d(16, anchors * 4, 1)
        self.logits = nn.Conv2d(16, anchors * classes, 1)

    def forward(self, images: torch.Tensor):
        feats = self.backbone(images)
        n = images.shape[0]
        boxes = self.boxes(feats).reshape(n, self.anchors, 4, -1).permute(0, 3, 1, 2).reshape(n, -1, 4)
        logits = self.logits(feats).reshape(n, self.anchors, -1, feats.shape[-2] * feats.shape[-1])
        return boxes, logits.permute(0, 3, 1, 2).reshape(n, boxes.shape[1], -1)
