from typing import Optional

import torch


@torch.jit.script
class SparseStorage(object):
    def __init__(self, row: torch.Tensor, col: torch.Tensor, value: Optional[torch.Tensor] = None,
                 num_rows: int = -1):
        self.row = row
        self.col = col
        self.value = value
        self.num_rows = int(row.max()) + 1 if num_rows < 0 else num_rows

    def has_value(self) -> bool:
        return self.value is not None

    def values_or_ones(self, dtype: torch.dtype) -> torch.Tensor:
        value = self.value
        if value is None:
            return torch.ones(self.row.numel(), dtype=dtype)
        return value.to(dtype)
