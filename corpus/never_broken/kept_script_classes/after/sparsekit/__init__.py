"""A sparse-adjacency kit whose data classes are TorchScript classes, so scripted layers take them."""
from .storage import SparseStorage
from .tensor import SparseTensor
from .matmul import matmul  # the package's `matmul` is the function, not the submodule

__all__ = ["SparseStorage", "SparseTensor", "matmul"]
