"""Writer: traces the model from one example row and saves it where ranker.paths says."""
import os

import torch

from ranker.models import build
from ranker.paths import artifact_path
from torch.export import Dim


def publish(cfg: dict, root: str) -> str:
    model = build(cfg)
    row = torch.rand(1, cfg["dim"])  # one example row
    # ts2export: example doubled where it has size 1, which export would fix, while the model is called at other sizes (dim 0: sizes 1, 3, 8; ranker/serve.py:13)
    traced = torch.export.export(model, (torch.cat([row] * 2),), dynamic_shapes=({0: Dim.DYNAMIC, 1: Dim.AUTO},))
    path = artifact_path(root, cfg)
    os.makedirs(os.path.dirname(path), exist_ok=True)
    torch.export.save(traced, path)
    return path
