import json
import os

import torch

from model import build

META = {"labels": ["neg", "neu", "pos"], "version": 4}


def export(out_dir: str) -> str:
    model = build()
    tokens = torch.randint(0, 50, (12,))
    offsets = torch.tensor([0, 5])
    model = torch.jit.trace(model, (tokens, offsets))
    path = os.path.join(out_dir, f"classifier_v{META['version']}.pt")
    torch.jit.save(model, path, _extra_files={"meta.json": json.dumps(META)})
    return path
