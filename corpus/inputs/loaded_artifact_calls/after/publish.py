"""Script the scorer and publish it: nothing here calls the model."""
import torch

from model import TextScorer
from torch.export import Dim


def publish(path):
    torch.manual_seed(0)
    scorer = TextScorer().eval()
    scripted = torch.export.export(scorer, (torch.zeros(3, 4, dtype=torch.int64),), dynamic_shapes=({0: Dim.AUTO, 1: Dim.DYNAMIC},))
    torch.export.save(scripted, path)
