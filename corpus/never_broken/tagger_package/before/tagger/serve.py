"""Reader, in another module: builds the same path with pathlib and serves single rows and batches."""
from pathlib import Path

import torch

from tagger.filters import confident


class Service:
    def __init__(self, root: str, cfg: dict):
        self.model = torch.jit.load(str(Path(root) / f"{cfg['name']}-{cfg['version']}.pt"))

    def tag(self, feats: torch.Tensor, threshold: float = 0.45):
        with torch.no_grad():
            out = self.model(feats)
        return out.probs, confident(out.probs, threshold)
