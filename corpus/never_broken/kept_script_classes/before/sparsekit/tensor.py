from typing import Optional

import torch

from .storage import SparseStorage


@torch.jit.script
class SparseTensor(object):
    storage: SparseStorage

    def __init__(self, row: torch.Tensor, col: torch.Tensor, value: Optional[torch.Tensor] = None,
                 num_rows: int = -1):
        self.storage = SparseStorage(row, col, value, num_rows)

    def nnz(self) -> int:
        return self.storage.row.numel()

    def sizes(self) -> int:
        return self.storage.num_rows
