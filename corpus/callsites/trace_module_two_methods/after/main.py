"""trace_module with two entry points (forward and encode), saved, loaded and both called."""
import sys

import torch
from torch import nn
from torch.export import Dim
from torch.export.pt2_archive._package import load_pt2, package_pt2


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
    class MethodAsModule(torch.nn.Module):
        """One method of a module as `forward`, so that torch.export can export it (added by ts2export)."""

        def __init__(self, module, method):
            super().__init__()
            self.module = module
            self.method = method

        def forward(self, *args):
            return getattr(self.module, self.method)(*args)

    traced = {"model": torch.export.export(model, (queries, docs), dynamic_shapes=({i: Dim.AUTO for i in range(queries.dim())}, {i: Dim.AUTO for i in range(docs.dim())})), "encode": torch.export.export(MethodAsModule(model, "encode"), (docs,), dynamic_shapes=(({i: Dim.AUTO for i in range(docs.dim())},),))}
    package_pt2("retriever.pt", exported_programs=traced)

    served = {name: ep.module() for name, ep in load_pt2("retriever.pt").exported_programs.items()}
    torch.manual_seed(1)
    index = served["encode"](torch.randn(11, 14))
    scores = served["model"](torch.randn(5, 10), torch.randn(6, 14))
    torch.save({"index": index, "scores": scores, "direct": traced["encode"].module()(docs)}, out)


if __name__ == "__main__":
    main(sys.argv[1])
