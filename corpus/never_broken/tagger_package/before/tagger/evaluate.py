"""Evaluation: the monitored tagger, scripted for speed, over a few batches."""
import torch

from tagger.model import Monitored, build_tagger


def evaluate(cfg: dict, batches) -> torch.Tensor:
    monitored = torch.jit.script(Monitored(build_tagger(cfg)))
    return torch.cat([monitored(b) for b in batches])
