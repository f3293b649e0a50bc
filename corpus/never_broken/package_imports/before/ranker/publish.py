"""Writer: traces the model from one example row and saves it where ranker.paths says."""
import os

import torch

from ranker.models import build
from ranker.paths import artifact_path


def publish(cfg: dict, root: str) -> str:
    model = build(cfg)
    row = torch.rand(1, cfg["dim"])  # one example row
    traced = torch.jit.trace(model, row)
    path = artifact_path(root, cfg)
    os.makedirs(os.path.dirname(path), exist_ok=True)
    torch.jit.save(traced, path)
    return path
