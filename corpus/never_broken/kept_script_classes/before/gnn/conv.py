import torch
from torch import Tensor, nn

from sparsekit import SparseTensor, matmul


class GraphConv(nn.Module):
    def __init__(self, in_dim: int, out_dim: int, reduce: str = "mean"):
        super().__init__()
        self.reduce = reduce
        self.lin_rel = nn.Linear(in_dim, out_dim)
        self.lin_root = nn.Linear(in_dim, out_dim, bias=False)

    def forward(self, x: Tensor, adj_t: SparseTensor) -> Tensor:
        return self.lin_rel(matmul(adj_t, x, self.reduce)) + self.lin_root(x)


class DenseGraphConv(nn.Module):
    def __init__(self, in_dim: int, out_dim: int):
        super().__init__()
        self.lin = nn.Linear(in_dim, out_dim)

    def forward(self, x: Tensor, adj: Tensor) -> Tensor:
        return self.lin(matmul(adj, x))


@torch.jit.script
def degree(adj_t: SparseTensor) -> Tensor:
    return torch.zeros(adj_t.sizes(), dtype=torch.long).index_add(
        0, adj_t.storage.row, torch.ones_like(adj_t.storage.row))
