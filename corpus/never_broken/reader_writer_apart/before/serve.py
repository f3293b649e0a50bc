"""Serving: loads what export_model.py wrote."""
from pathlib import Path

import torch


class Predictor:
    def __init__(self, model_dir):
        self.model = torch.jit.load(str(Path(model_dir) / "classifier.pt"))
        self.head = torch.jit.load(model_dir + "/head.pt")
        self.strokes = torch.jit.load(str(Path(model_dir, "strokes.pt")))

    def predict(self, images):
        with torch.no_grad():
            return self.model(images).softmax(-1)

    def logits(self, features):
        with torch.no_grad():
            return self.head(features)

    def encode(self, strokes):
        with torch.no_grad():
            return self.strokes(strokes)
