"""Evaluate every model of the zoo, compiled with TorchScript when asked (the default here)."""
import argparse
import sys

import torch

import zoo
from data import batches

CONFIG = '{"seed": 3, "sizes": [4, 1, 7], "features": 5}'


def evaluate(name: str, torchscript: bool):
    torch.manual_seed(0)
    model = zoo.create(name).eval()
    if torchscript:
        # ts2export: `torch.jit.script(model)` only sped up the calls below; the module runs eager (torch.compile(model) compiles it again)
        model = model
    with torch.no_grad():
        return [model(batch) for batch in batches(CONFIG)]


def main(argv):
    parser = argparse.ArgumentParser()
    parser.add_argument("out")
    parser.add_argument("--eager", action="store_true")
    args = parser.parse_args(argv)
    outputs = {name: evaluate(name, not args.eager) for name in ("mlp_small", "gated_small", "scaled_small")}
    outputs["summary"] = zoo.create("gated_small").summary()
    torch.save(outputs, args.out)


if __name__ == "__main__":
    main(sys.argv[1:])
