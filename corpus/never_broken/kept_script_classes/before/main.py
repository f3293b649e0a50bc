"""A GNN layer over sparse adjacency, scripted for a C++ server that takes SparseTensor inputs."""
import sys

import torch

from gnn.conv import DenseGraphConv, GraphConv, degree
from sparsekit import SparseTensor


def main(out):
    torch.manual_seed(0)
    conv = GraphConv(4, 3).eval()
    dense_conv = DenseGraphConv(4, 3).eval()
    # the server's module; no example input is at hand here (the server builds the SparseTensor)
    scripted = torch.jit.script(conv)  # ts2export: ignore[TSX302]
    x = torch.randn(5, 4)
    adj_t = SparseTensor(torch.tensor([0, 1, 1, 2, 4]), torch.tensor([1, 0, 2, 1, 3]), num_rows=5)
    torch.save({
        "scripted": scripted(x, adj_t),
        "eager": conv(x, adj_t),
        "dense": dense_conv(x, torch.eye(5)),
        "degree": degree(adj_t),
        "operator": adj_t @ x,
        "method": adj_t.matmul(x, "mean"),
    }, out)


if __name__ == "__main__":
    main(sys.argv[1])
