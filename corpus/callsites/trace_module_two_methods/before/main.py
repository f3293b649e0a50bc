"""trace_module with two entry points (forward and encode), saved, loaded and both called."""
import sys

import torch
from torch import nn


class Retriever(nn.Module):
    def __init__(self):
        super().__init__()
        self.query = nn.Linear(10, 6)
        self.doc = nn.Linear(14, 6)

    def forward(self, queries, docs):
        return self.query(queries) @ self.encode(docs).T

    def encode(self, docs):
        return torch.nn.functional.normalize(self.doc(docs), dim=-1)


def main(out):
    torch.manual_seed(0)
    model = Retriever().eval()
    queries, docs = torch.randn(3, 10), torch.randn(4, 14)
    traced = torch.jit.trace_module(model, {"forward": (queries, docs), "encode": docs})
    traced.save("retriever.pt")

    served = torch.jit.load("retriever.pt")
    served.eval()
    torch.manual_seed(1)
    index = served.encode(torch.randn(11, 14))
    scores = served(torch.randn(5, 10), torch.randn(6, 14))
    torch.save({"index": index, "scores": scores, "direct": traced.encode(docs)}, out)


if __name__ == "__main__":
    main(sys.argv[1])
