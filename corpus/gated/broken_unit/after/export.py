"""Export both serving artifacts into a folder."""
import os

import torch

from models import Scale, Threshold


def export_all(folder):
    torch.manual_seed(0)
    threshold = torch.jit.trace(Threshold(), torch.ones(2, 4))
    threshold.save(os.path.join(folder, "threshold.pt"))
    scale = torch.jit.trace(Scale().eval(), torch.ones(2, 4))
    scale.save(os.path.join(folder, "scale.pt"))
