"""Training side: writes the artifact under a folder chosen by the caller."""
from pathlib import Path

import torch

from models import make_model
from torch.export import Dim


def export(cfg: dict, out_dir: Path) -> Path:
    model = make_model(cfg)
    example = torch.rand(1, cfg["dim"])  # one sample, as the notebook did
    # ts2export: example doubled where it has size 1, which export would fix, while the model is called at other sizes (dim 0: sizes 1, 4, 7; serve.py:13)
    traced = torch.export.export(model, (torch.cat([example] * 2),), dynamic_shapes=({0: Dim.DYNAMIC, 1: Dim.AUTO},))
    target = out_dir / f"{cfg['name']}.pt"
    torch.export.save(traced, str(target))
    return target
