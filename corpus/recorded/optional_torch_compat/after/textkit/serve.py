"""The serving side: loads the compiled classifier and labels texts."""
from textkit.compat import has_torch, torch
from textkit.tokenize import encode

LABELS = ("animal", "motion", "other")
#: which runtime served the scores, reported with them (a backend key, as hummingbird-ml keeps one)
BACKEND = "torch.jit" if has_torch else "none"


class Labeler:
    def __init__(self, path):
        if not has_torch:
            raise RuntimeError("serving needs torch")
        self.model = torch.export.load(path).module()

    def scores(self, texts):
        ids = torch.tensor([encode(t) for t in texts])
        return self.model(ids)

    def label(self, texts):
        return [LABELS[i] for i in self.scores(texts).argmax(-1).tolist()]
