"""Script the scorer and publish it: nothing here calls the model."""
import torch

from model import TextScorer


def publish(path):
    torch.manual_seed(0)
    scorer = TextScorer().eval()
    scripted = torch.jit.script(scorer)
    scripted.save(path)
