"""Reader: loads the artifact from the same place, in another module of the package."""
import torch

from ranker.paths import artifact_path


class Ranker:
    def __init__(self, root: str, cfg: dict):
        self.model = torch.jit.load(artifact_path(root, cfg))

    def rank(self, feats: torch.Tensor) -> torch.Tensor:
        with torch.no_grad():
            return self.model(feats)
