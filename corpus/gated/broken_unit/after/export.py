"""Export both serving artifacts into a folder."""
import os

import torch

from models import Scale, Threshold
from torch.export import Dim


def export_all(folder):
    torch.manual_seed(0)
    threshold = torch.jit.trace(Threshold(), torch.ones(2, 4))
    threshold.save(os.path.join(folder, "threshold.pt"))
    scale = torch.export.export(Scale().eval(), (torch.ones(2, 4),), dynamic_shapes=({0: Dim.AUTO, 1: Dim.AUTO},))
    torch.export.save(scale, os.path.join(folder, "scale.pt"))
