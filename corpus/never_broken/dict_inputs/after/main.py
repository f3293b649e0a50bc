"""A heterogeneous-graph layer in the shape of a graph-learning library: one linear layer per node
type over a dict of feature tensors, and a readout over a list of per-graph tensors; the test
scripts both and calls them with their example inputs and others."""

import sys
from typing import Dict, List

import torch
from torch import nn
from torch.export import Dim


class HeteroLinear(nn.Module):
    def __init__(self):
        super().__init__()
        self.lins = nn.ModuleDict({"v": nn.Linear(16, 4), "w": nn.Linear(8, 4)})

    def forward(self, x_dict: Dict[str, torch.Tensor]) -> Dict[str, torch.Tensor]:
        out = {}
        for key, lin in self.lins.items():
            out[key] = lin(x_dict[key])
        return out


class ListReadout(nn.Module):
    def forward(self, xs: List[torch.Tensor]) -> torch.Tensor:
        return torch.stack([x.sum(0) for x in xs])


def main(out):
    torch.manual_seed(0)
    lin = HeteroLinear()
    x_dict = {"v": torch.randn(3, 16), "w": torch.randn(2, 8)}
    jit = torch.export.export(lin, (x_dict,), dynamic_shapes=({k: {i: Dim.AUTO for i in range(t.dim())} for k, t in x_dict.items()},)).module()
    a = jit(x_dict)
    b = jit({"v": torch.randn(5, 16), "w": torch.randn(4, 8)})
    readout = ListReadout()
    graphs = [torch.randn(3, 4), torch.randn(5, 4)]
    readout_jit = torch.export.export(readout, (graphs,), dynamic_shapes=([{i: Dim.AUTO for i in range(t.dim())} for t in graphs],)).module()
    c = readout_jit(graphs)
    d = readout_jit([torch.randn(2, 4), torch.randn(6, 4)])
    torch.save([a, b, c, d], out)


if __name__ == "__main__":
    main(sys.argv[1])
