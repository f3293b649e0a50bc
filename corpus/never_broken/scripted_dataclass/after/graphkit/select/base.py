"""What a node-selection operator returns, as a graph-learning library declares it: a dataclass
that TorchScript can compile once it is scripted (its generated methods have no source)."""

from dataclasses import dataclass

import torch


@dataclass(init=False)
class SelectOutput:
    node_index: torch.Tensor
    num_nodes: int
    weight: torch.Tensor

    def __init__(self, node_index: torch.Tensor, num_nodes: int, weight: torch.Tensor):
        self.node_index = node_index
        self.num_nodes = num_nodes
        self.weight = weight


SelectOutput = torch.jit.script(SelectOutput)
