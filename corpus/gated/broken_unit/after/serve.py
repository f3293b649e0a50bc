import os

import torch


def run_threshold(folder, x):
    with torch.no_grad():
        return torch.jit.load(os.path.join(folder, "threshold.pt"))(x)


def run_scale(folder, x):
    with torch.no_grad():
        return torch.export.load(os.path.join(folder, "scale.pt")).module()(x)
