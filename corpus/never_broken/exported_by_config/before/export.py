"""Training side: writes the artifact under a folder chosen by the caller."""
from pathlib import Path

import torch

from models import make_model


def export(cfg: dict, out_dir: Path) -> Path:
    model = make_model(cfg)
    example = torch.rand(1, cfg["dim"])  # one sample, as the notebook did
    traced = torch.jit.trace(model, example)
    target = out_dir / f"{cfg['name']}.pt"
    traced.save(str(target))
    return target
