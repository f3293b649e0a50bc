"""Serving module: loads the artifact that deploy.py wrote."""
import json

import torch


class Service:
    def __init__(self, path="classifier.pt"):
        files = {"labels.json": ""}
        self.model = torch.jit.load(path, map_location="cpu", _extra_files=files)
        self.model.eval()
        self.labels = json.loads(files["labels.json"])

    @torch.no_grad()
    def predict(self, images):
        probs = self.model(images)
        return probs, [self.labels[i] for i in probs.argmax(-1).tolist()]
