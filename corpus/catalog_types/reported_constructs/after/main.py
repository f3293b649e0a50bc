"""TorchScript constructs that need a person, next to ones that are fixed: an exported method that is
an extra entry point of the artifact, a container `torch.jit.isinstance`, an interface used as a
parameter type (it becomes a `typing.Protocol`), and `torch.jit.Attribute` in a plain `nn.Module`."""
import sys
from typing import Protocol, Dict, List, Optional

import torch
from torch import Tensor, nn


class Runner(Protocol):
    def run(self, x: Tensor) -> Tensor:
        pass


class Doubler:
    def __init__(self):
        pass

    def run(self, x: Tensor) -> Tensor:
        return x * 2.0


def apply_runner(r: Runner, x: Tensor) -> Tensor:
    return r.run(x) + 1.0


class Tagger(nn.Module):
    tags: Dict[str, int]

    def __init__(self):
        super().__init__()
        self.proj = nn.Linear(4, 4)
        self.tags = {"a": 1, "b": 2}

    @torch.jit.export
    def encode(self, x: Tensor) -> Tensor:
        return self.proj(x).relu()

    def forward(self, x: Tensor, extra: Optional[List[Tensor]] = None) -> Tensor:
        y = self.proj(x) * float(self.tags["b"])
        if torch.jit.isinstance(extra, List[Tensor]):
            for e in extra:
                y = y + e
        return y


def main(out):
    torch.manual_seed(0)
    model = torch.jit.script(Tagger().eval())
    x = torch.randn(2, 4)
    with torch.no_grad():
        outputs = {
            "plain": model(x),
            "extra": model(x, [torch.ones(2, 4), torch.full((2, 4), 0.5)]),
            "encode": model.encode(x),
            "runner": apply_runner(Doubler(), x),
        }
    torch.save(outputs, out)


if __name__ == "__main__":
    main(sys.argv[1])
