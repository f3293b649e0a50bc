import torch

from .tensor import SparseTensor


@torch.jit._overload  # noqa: F811
def matmul(src, other, reduce="sum"):  # noqa: F811
    # type: (SparseTensor, torch.Tensor, str) -> torch.Tensor
    pass


@torch.jit._overload  # noqa: F811
def matmul(src, other, reduce="sum"):  # noqa: F811
    # type: (torch.Tensor, torch.Tensor, str) -> torch.Tensor
    pass


def matmul(src, other, reduce="sum"):  # noqa: F811
    if isinstance(src, SparseTensor):
        storage = src.storage
        weights = storage.values_or_ones(other.dtype).unsqueeze(-1)
        out = torch.zeros(storage.num_rows, other.size(1), dtype=other.dtype)
        out = out.index_add(0, storage.row, other[storage.col] * weights)
        if reduce == "mean":
            deg = torch.zeros(storage.num_rows, dtype=other.dtype).index_add(
                0, storage.row, torch.ones_like(storage.row, dtype=other.dtype))
            out = out / deg.clamp(min=1.0).unsqueeze(-1)
        return out
    return src @ other


# the kit gives its tensor operators after the class is made (TorchScript compiled it before)
SparseTensor.matmul = lambda self, other, reduce="sum": matmul(self, other, reduce)
SparseTensor.__matmul__ = lambda self, other: matmul(self, other)
