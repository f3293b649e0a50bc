"""A TorchScript-era model built the old way: a `torch.jit.ScriptModule` subclass with
`@torch.jit.script_method`, `__constants__`, `Final`, `torch.jit.Attribute`, a child that picks a
submodule by index through a `@torch.jit.interface`, `_overload_method` stubs, a TorchScript class,
scripted free functions, a scripted and a traced child stored in `__init__`."""
import sys
from typing import List

import torch
from torch import Tensor, nn
from typing import Final


@torch.jit.interface
class ModuleInterface(nn.Module):
    def forward(self, input: Tensor) -> Tensor:
        pass


class Stats:
    def __init__(self, total: float, count: int):
        self.total = total
        self.count = count

    def mean(self) -> float:
        return self.total / self.count


@torch.jit.script
def gelu_tanh(x: Tensor) -> Tensor:
    return 0.5 * x * (1.0 + torch.tanh(0.7978845608 * (x + 0.044715 * x * x * x)))


def rms_norm(x: Tensor) -> Tensor:
    return x / torch.sqrt((x * x).mean(-1, keepdim=True) + 1e-6)


rms_norm = torch.jit.script(rms_norm)


def _soft_clip(x: Tensor) -> Tensor:
    return 3.0 * torch.tanh(x / 3.0)


soft_clip = torch.jit.script(_soft_clip)


@torch.jit.script_if_tracing
def pad_rows(x: Tensor, n: int) -> Tensor:
    if x.size(0) >= n:
        return x
    return torch.cat([x, x.new_zeros(n - x.size(0), x.size(1))])


class Router(nn.Module):
    """Picks one of its branches by a runtime index (TorchScript needs the interface for that)."""

    def __init__(self):
        super().__init__()
        self.branches = nn.ModuleList([nn.Linear(8, 8), nn.Tanh(), nn.Sigmoid()])

    @torch.jit._overload_method  # noqa: F811
    def shift(self, x, s):
        # type: (Tensor, int) -> Tensor
        pass

    @torch.jit._overload_method  # noqa: F811
    def shift(self, x, s):
        # type: (Tensor, float) -> Tensor
        pass

    def shift(self, x, s):  # noqa: F811
        return x + s

    def route(self, x: Tensor, i: int) -> Tensor:
        branch: ModuleInterface = self.branches[i]
        return branch.forward(x)

    def forward(self, x: Tensor, i: int) -> Tensor:
        return self.shift(self.route(x, i), 1) + self.shift(x, 0.25)


class Model(torch.jit.ScriptModule):
    __constants__ = ["depth"]
    scale: Final[float]
    bias: Final[int]
    weights: List[float]

    def __init__(self):
        super().__init__()
        self.depth = 2
        self.scale = 0.5
        self.bias = 1
        self.weights = [1.0, 2.0, 4.0]
        self.inp = torch.jit.script(nn.Linear(6, 8))
        self.act = torch.jit.trace(nn.LeakyReLU(0.1), torch.ones(2, 8))
        self.router = Router()
        self.out = nn.Linear(8, 3)

    @torch.jit.script_method
    def forward(self, x: Tensor, i: int) -> Tensor:
        h = self.act(self.inp(pad_rows(x, 4)))
        for _ in range(self.depth):
            h = rms_norm(gelu_tanh(self.router(h, i)))
        total = 0.0
        for w in self.weights:
            total += w
        st = Stats(total, len(self.weights))
        y = soft_clip(self.out(h) * self.scale * st.mean()) + self.bias
        if isinstance(y, Tensor):
            y = y * 1.0
        return y


def main(out):
    torch.manual_seed(0)
    model = Model()
    model.eval()
    x = torch.randn(3, 6)
    with torch.no_grad():
        outputs = {f"branch{i}": model(x, i) for i in range(3)}
        outputs["big"] = model(torch.randn(5, 6), 1)
    outputs["weights"] = list(model.weights)
    outputs["stats_mean"] = Stats(3.0, 4).mean()
    torch.save(outputs, out)


if __name__ == "__main__":
    main(sys.argv[1])
