"""One TorchScript-era module that mixes every construct of the rule catalogue: typing helpers,
compiler-only decorators, a ScriptModule base, scripted children, runtime queries, fork/wait,
TorchScript errors, an interface, freeze and fusion knobs, and the report-only constructs."""
import sys
from typing import Dict, List

import torch
from torch import Tensor, nn
from torch.jit import Final

torch.jit.set_fusion_strategy([("STATIC", 2)])
torch._C._jit_set_profiling_executor(True)


@torch.jit.interface
class Block(nn.Module):
    def forward(self, input: Tensor) -> Tensor:
        pass


@torch.jit.script
class Counter:
    def __init__(self, start: int):
        self.value = start

    def bump(self) -> int:
        self.value += 1
        return self.value


@torch.jit.script
def swish(x: Tensor) -> Tensor:
    return x * torch.sigmoid(x)


def clamp_norm(x: Tensor) -> Tensor:
    return x / x.norm(2, -1, True).clamp_min(1.0)


clamp_norm = torch.jit.script(clamp_norm)


@torch.jit.script_if_tracing
def pad_to(x: Tensor, n: int) -> Tensor:
    if x.size(-1) >= n:
        return x
    return torch.cat([x, x.new_zeros(x.size(0), n - x.size(-1))], dim=-1)


def branch(x: Tensor, w: Tensor) -> Tensor:
    return torch.tanh(x @ w)


class Scaler(nn.Module):
    @torch.jit._overload_method  # noqa: F811
    def scale(self, x, s):
        # type: (Tensor, int) -> Tensor
        pass

    @torch.jit._overload_method  # noqa: F811
    def scale(self, x, s):
        # type: (Tensor, float) -> Tensor
        pass

    def scale(self, x, s):  # noqa: F811
        return x * s

    def forward(self, x: Tensor, s: float) -> Tensor:
        return self.scale(x, s) + self.scale(x, 1)


class Experts(torch.jit.ScriptModule):
    __constants__ = ["n_experts"]
    gain: Final[float]

    def __init__(self):
        super().__init__()
        self.n_experts = 2
        self.gain = 0.5
        self.w = nn.Parameter(torch.randn(8, 8) * 0.3)
        self.mix = torch.jit.Attribute([0.25, 0.75], List[float])
        self.proj = torch.jit.script(nn.Linear(6, 8))
        self.blocks = nn.ModuleList([nn.ReLU(), nn.Tanh()])
        self.scaler = Scaler()

    @torch.jit.export
    def pick(self, x: Tensor, i: int) -> Tensor:
        block: Block = self.blocks[i]
        return block.forward(x)

    @torch.jit.ignore
    def describe(self) -> str:
        return f"{self.n_experts} experts"

    @torch.jit.unused
    def to_numpy(self, x: Tensor):
        return x.numpy()

    @torch.jit.script_method
    def forward(self, x: Tensor, i: int) -> Tensor:
        h = swish(self.proj(pad_to(x, 6)))
        futures = torch.jit.annotate(List[torch.jit.Future[Tensor]], [])
        for _ in range(self.n_experts):
            futures.append(torch.jit.fork(branch, h, self.w))
        outs = [torch.jit.wait(f) for f in futures]
        y = outs[0] * self.mix[0] + outs[1] * self.mix[1]
        if torch.jit.is_scripting():
            y = self.pick(y, i)
        else:
            y = self.blocks[i](y)
        y = self.scaler(y, self.gain)
        if torch.jit.is_tracing():
            y = y.contiguous()
        if torch.jit.isinstance(y, Tensor):
            y = clamp_norm(y)
        return y


def summarise(stats: Dict[str, List[int]]) -> int:
    if torch.jit.isinstance(stats, Dict[str, List[int]]):
        return sum(len(v) for v in stats.values())
    return 0


def check_batch(x: Tensor) -> Tensor:
    if x.dim() != 2:
        raise torch.jit.Error("expected a matrix")
    return x


def deploy_ops(model):
    return torch.jit.export_opnames(model)


def main(out):
    torch.manual_seed(0)
    model = Experts()
    model.eval()
    frozen_proj = torch.jit.freeze(model.proj)
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
