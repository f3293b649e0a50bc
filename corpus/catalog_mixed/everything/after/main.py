"""One TorchScript-era module that mixes every construct of the rule catalogue: typing helpers,
compiler-only decorators, a ScriptModule base, scripted children, runtime queries, fork/wait,
TorchScript errors, an interface, freeze and fusion knobs, and the report-only constructs."""
import sys
from typing import Dict, List

import torch
from torch import Tensor, nn
from typing import Final


class Counter:
    def __init__(self, start: int):
        self.value = start

    def bump(self) -> int:
        self.value += 1
        return self.value


def swish(x: Tensor) -> Tensor:
    return x * torch.sigmoid(x)


def clamp_norm(x: Tensor) -> Tensor:
    return x / x.norm(2, -1, True).clamp_min(1.0)


def pad_to(x: Tensor, n: int) -> Tensor:
    if x.size(-1) >= n:
        return x
    return torch.cat([x, x.new_zeros(x.size(0), n - x.size(-1))], dim=-1)


def branch(x: Tensor, w: Tensor) -> Tensor:
    return torch.tanh(x @ w)


class Scaler(nn.Module):
    def scale(self, x, s):  # noqa: F811
        return x * s

    def forward(self, x: Tensor, s: float) -> Tensor:
        return self.scale(x, s) + self.scale(x, 1)


class Experts(nn.Module):
    __constants__ = ["n_experts"]
    gain: Final[float]
    mix: List[float]

    def __init__(self):
        super().__init__()
        self.n_experts = 2
        self.gain = 0.5
        self.w = nn.Parameter(torch.randn(8, 8) * 0.3)
        self.mix = [0.25, 0.75]
        self.proj = nn.Linear(6, 8)
        self.blocks = nn.ModuleList([nn.ReLU(), nn.Tanh()])
        self.scaler = Scaler()

    def pick(self, x: Tensor, i: int) -> Tensor:
        block = self.blocks[i]
        return block.forward(x)

    def describe(self) -> str:
        return f"{self.n_experts} experts"

    def to_numpy(self, x: Tensor):
        return x.numpy()

    def forward(self, x: Tensor, i: int) -> Tensor:
        h = swish(self.proj(pad_to(x, 6)))
        futures = []
        for _ in range(self.n_experts):
            futures.append(branch(h, self.w))
        outs = list(futures)
        y = outs[0] * self.mix[0] + outs[1] * self.mix[1]
        if torch.compiler.is_exporting():
            y = self.pick(y, i)
        else:
            y = self.blocks[i](y)
        y = self.scaler(y, self.gain)
        if torch.compiler.is_exporting():
            y = y.contiguous()
        if isinstance(y, Tensor):
            y = clamp_norm(y)
        return y


def summarise(stats: Dict[str, List[int]]) -> int:
    if torch.jit.isinstance(stats, Dict[str, List[int]]):
        return sum(len(v) for v in stats.values())
    return 0


def check_batch(x: Tensor) -> Tensor:
    if x.dim() != 2:
        raise RuntimeError("expected a matrix")
    return x


def deploy_ops(model):
    return torch.jit.export_opnames(model)


def main(out):
    torch.manual_seed(0)
    model = Experts()
    model.eval()
    frozen_proj = model.proj
    x = check_batch(torch.randn(3, 5))
    with torch.no_grad():
        outputs = {f"pick{i}": model(x, i) for i in range(2)}
        outputs["proj"] = frozen_proj(torch.randn(2, 6))
        outputs["short"] = model(torch.randn(4, 4), 1)
    outputs["count"] = [Counter(3).bump(), summarise({"a": [1, 2], "b": [3]})]
    outputs["describe"] = model.describe()
    torch.save(outputs, out)


if __name__ == "__main__":
    main(sys.argv[1])
