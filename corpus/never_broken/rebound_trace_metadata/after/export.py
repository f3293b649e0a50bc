import json
import os

import torch

from model import build
from torch.export import Dim

META = {"labels": ["neg", "neu", "pos"], "version": 4}


def export(out_dir: str) -> str:
    model = build()
    tokens = torch.randint(0, 50, (12,))
    offsets = torch.tensor([0, 5])
    model = torch.export.export(model, (tokens, offsets), dynamic_shapes=({0: Dim.AUTO}, {0: Dim.AUTO}))
    path = os.path.join(out_dir, f"classifier_v{META['version']}.pt")
    torch.export.save(model, path, extra_files={"meta.json": json.dumps(META)})
    return path
