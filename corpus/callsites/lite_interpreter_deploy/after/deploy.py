"""Mobile deploy script: trace the keyword spotter and write a lite-interpreter program."""
import torch
from torch import nn
import pathlib
from executorch.backends.xnnpack.partition.xnnpack_partitioner import XnnpackPartitioner
from executorch.exir import to_edge_transform_and_lower
from torch.export import Dim


class KeywordSpotter(nn.Module):
    def __init__(self):
        super().__init__()
        self.frame = nn.Linear(4, 16)
        self.head = nn.Linear(16, 3)

    def forward(self, features):
        h = torch.relu(self.frame(features))
        return self.head(h.mean(1))


def deploy(path):
    torch.manual_seed(0)
    model = KeywordSpotter().eval()
    example = torch.randn(2, 20, 4)
    with torch.no_grad():
        traced = torch.export.export(model, (example,), dynamic_shapes=({0: Dim.AUTO(max=64), 1: Dim.AUTO(max=160), 2: Dim.AUTO(max=64)},))
    pathlib.Path(path).write_bytes(to_edge_transform_and_lower(traced, partitioner=[XnnpackPartitioner()]).to_executorch().buffer)
    return model
