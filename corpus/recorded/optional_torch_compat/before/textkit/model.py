"""The classifier: an embedding bag and a linear head."""
from .compat import torch


class BagClassifier(torch.nn.Module):
    def __init__(self, vocab=11, dim=8, classes=3):
        super().__init__()
        self.embed = torch.nn.Embedding(vocab, dim, padding_idx=0)
        self.head = torch.nn.Linear(dim, classes)

    def forward(self, ids):
        mask = (ids > 0).unsqueeze(-1).to(torch.float32)
        pooled = (self.embed(ids) * mask).sum(1) / mask.sum(1).clamp(min=1.0)
        if not torch.jit.is_scripting():
            pooled = pooled * 1.0  # a hook point in eager mode
        return self.head(pooled)


def export_classifier(model, path):
    """Compile the classifier for the serving process and write it to ``path``."""
    compiled = torch.jit.script(model.eval())
    torch.jit.optimized_execution(compiled)  # (does nothing: builds a context manager and drops it)
    torch.jit.save(compiled, path)
    return path
