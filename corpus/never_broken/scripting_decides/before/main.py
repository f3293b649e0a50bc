"""A scatter layer in the shape of a graph-learning library: eager Python knows a padded size that
TorchScript does not (`if not torch.jit.is_scripting(): ...` changes the result), beside a layer
whose guard only validates its input. A test scripts both with inputs read from a file."""

import json
import sys

import torch
from torch import nn


class Scatter(nn.Module):
    def forward(self, x: torch.Tensor, index: torch.Tensor) -> torch.Tensor:
        dim_size = index.size(0)
        if not torch.jit.is_scripting():
            dim_size = dim_size + 1  # eager callers get one padding row
        if torch.nonzero(index).size(0) == 0:
            return x
        out = torch.zeros(dim_size, x.size(1))
        return out.index_add(0, index, x)


class Checked(nn.Module):
    def forward(self, x: torch.Tensor) -> torch.Tensor:
        if not torch.jit.is_scripting():
            if x.dim() != 2:
                raise ValueError("expected a 2-D batch")
        return x * 2


def main(out: str) -> None:
    x = torch.tensor(json.loads("[[1.0, 2.0, 3.0], [4.0, 5.0, 6.0], [7.0, 8.0, 9.0], [1.0, 1.0, 1.0]]"))
    index = torch.tensor(json.loads("[0, 1, 1, 2]"))
    scatter = torch.jit.script(Scatter())
    checked = torch.jit.script(Checked())
    torch.save([scatter(x, index), checked(x), checked(x[:2])], out)


if __name__ == "__main__":
    main(sys.argv[1])
