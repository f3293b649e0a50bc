"""Serving script: loads the artifact that train.ipynb wrote and calls it."""
import torch


def predict(batch, path="model.pt"):
    model = torch.export.load(path).module()
    return model(batch)
