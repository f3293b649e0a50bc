"""Evaluation: the monitored tagger, scripted for speed, over a few batches."""
import torch

from tagger.model import Monitored, build_tagger


def evaluate(cfg: dict, batches) -> torch.Tensor:
    # ts2export: `torch.jit.script(Monitored(build_tagger(cfg)))` only sped up the calls below; the module runs eager (torch.compile(Monitored(build_tagger(cfg))) compiles it again)
    monitored = Monitored(build_tagger(cfg))
    return torch.cat([monitored(b) for b in batches])
