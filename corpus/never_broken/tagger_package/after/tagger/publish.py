"""Writer: scripts the tagger a factory builds and saves it under a versioned name."""
import os

import torch

from tagger.model import build_tagger
from torch.export import Dim


def publish(cfg: dict, root: str) -> str:
    scripted = torch.export.export(build_tagger(cfg), (torch.ones(2, 6),), dynamic_shapes=({0: Dim.DYNAMIC, 1: Dim.AUTO},))
    path = os.path.join(root, f"{cfg['name']}-{cfg['version']}.pt")
    torch.export.save(scripted, path)
    return path
