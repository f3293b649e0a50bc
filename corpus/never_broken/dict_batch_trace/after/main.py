import sys
import tempfile

import torch
from torch import nn
from torch.export import Dim


class Encoder(nn.Module):
    def __init__(self):
        super().__init__()
        self.emb = nn.Embedding(50, 8)
        self.out = nn.Linear(8, 3)

    def forward(self, input_ids, attention_mask):
        h = self.emb(input_ids) * attention_mask.unsqueeze(-1)
        return self.out(h.sum(1) / attention_mask.sum(1, keepdim=True))


def collate(n, s):
    return {"input_ids": torch.randint(0, 50, (n, s)), "attention_mask": torch.ones(n, s)}


def main(out):
    torch.manual_seed(0)
    model = Encoder().eval()
    batch = collate(2, 5)
    traced = torch.export.export(model, (batch["input_ids"], batch["attention_mask"]), dynamic_shapes=({i: Dim.AUTO for i in range(batch["input_ids"].dim())}, {i: Dim.AUTO for i in range(batch["attention_mask"].dim())}))
    with tempfile.TemporaryDirectory() as d:
        torch.export.save(traced, d + "/enc.pt")
        served = torch.export.load(d + "/enc.pt").module()
        outs = [served(b["input_ids"], b["attention_mask"]) for b in (collate(3, 7), collate(4, 2))]
    torch.save(outs, out)


if __name__ == "__main__":
    main(sys.argv[1])
