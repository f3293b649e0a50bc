"""Trace a model with two inputs and dict/tuple outputs at batch 2, sequence 5; save, load, and
serve it at other batch sizes and sequence lengths (a trace is shape-generic)."""
import sys

import torch
from torch import nn
from torch.export import Dim


class Scorer(nn.Module):
    def __init__(self):
        super().__init__()
        self.embed = nn.Linear(16, 32)
        self.head = nn.Linear(32, 4)

    def forward(self, tokens, mask):
        h = torch.relu(self.embed(tokens)) * mask.unsqueeze(-1)
        pooled = h.sum(1) / mask.sum(1, keepdim=True).clamp(min=1)
        return {"logits": self.head(pooled), "pooled": pooled}, (h.mean(),)


def main(out):
    torch.manual_seed(0)
    model = Scorer().eval()
    tokens = torch.randn(2, 5, 16)
    mask = torch.ones(2, 5)
    with torch.no_grad():
        traced = torch.export.export(model, (tokens, mask), dynamic_shapes=({0: Dim.DYNAMIC, 1: Dim.DYNAMIC, 2: Dim.AUTO}, {0: Dim.DYNAMIC, 1: Dim.DYNAMIC}))
    torch.export.save(traced, "scorer.pt")

    loaded = torch.export.load("scorer.pt").module()
    outputs = {"direct": traced.module()(tokens, mask)}
    for batch, seq in [(2, 5), (7, 9), (3, 2)]:
        x = torch.randn(batch, seq, 16)
        m = (torch.rand(batch, seq) > 0.3).float()
        with torch.no_grad():
            outputs[f"{batch}x{seq}"] = loaded(x, m)
    torch.save(outputs, out)


if __name__ == "__main__":
    main(sys.argv[1])
