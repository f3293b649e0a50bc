"""Serving module: loads the artifact that deploy.py wrote."""
import json

import torch
import torch.export.passes


class Service:
    def __init__(self, path="classifier.pt"):
        files = {"labels.json": ""}
        self.model = torch.export.passes.move_to_device_pass(torch.export.load(path, extra_files=files), "cpu").module()
        self.labels = json.loads(files["labels.json"])

    @torch.no_grad()
    def predict(self, images):
        probs = self.model(images)
        return probs, [self.labels[i] for i in probs.argmax(-1).tolist()]
