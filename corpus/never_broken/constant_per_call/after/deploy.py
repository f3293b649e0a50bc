import torch

from vitkit import PatchClassifier


def export(path: str) -> None:
    torch.manual_seed(0)
    model = PatchClassifier().eval()
    scripted = torch.jit.script(model)
    scripted.save(path)
