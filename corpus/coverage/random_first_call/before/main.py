"""A zoo-style smoke test: build by name, script, call once with random inputs of the configured size."""
import sys

import torch

from model import create


def smoke(name: str, batch_size: int, input_size: tuple) -> torch.Tensor:
    model = create(name)
    model.eval()
    model = torch.jit.script(model)
    return model(torch.randint(0, 20, (batch_size, *input_size)), torch.randn(batch_size, 4))


def main(out: str) -> None:
    torch.manual_seed(0)
    results = [smoke(name, 2, (5,)) for name in ("tiny", "small")]
    torch.save(results, out)


if __name__ == "__main__":
    main(sys.argv[1])
