"""Writer: scripts the tagger a factory builds and saves it under a versioned name."""
import os

import torch

from tagger.model import build_tagger


def publish(cfg: dict, root: str) -> str:
    scripted = torch.jit.script(build_tagger(cfg))
    path = os.path.join(root, f"{cfg['name']}-{cfg['version']}.pt")
    torch.jit.save(scripted, path)
    return path
