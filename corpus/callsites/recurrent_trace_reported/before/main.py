"""A traced GRU tagger served at other sequence lengths: torch.export would specialize the sequence
length (verified in torch 2.13), so ts2export leaves this TorchScript in place and reports it."""
import sys

import torch
from torch import nn


class Tagger(nn.Module):
    def __init__(self):
        super().__init__()
        self.embed = nn.Embedding(20, 8)
        self.gru = nn.GRU(8, 8, batch_first=True)
        self.out = nn.Linear(8, 3)

    def forward(self, ids):
        states, _ = self.gru(self.embed(ids))
        return self.out(states)


def main(out):
    torch.manual_seed(0)
    model = Tagger().eval()
    ids = torch.randint(0, 20, (2, 5))
    traced = torch.jit.trace(model, ids)
    torch.jit.save(traced, "tagger.pt")
    served = torch.jit.load("tagger.pt")
    outputs = [served(torch.randint(0, 20, (batch, length))) for batch, length in [(2, 5), (3, 7), (4, 2)]]
    torch.save(outputs, out)


if __name__ == "__main__":
    main(sys.argv[1])
