"""Scripts each pooling layer by name from a literal table (as a zoo's check does) and saves
what the scripted layers compute."""
import sys

import torch

import layers

LAYERS = [
    ("LsePlus2d", {}, (3, 16, 4, 4)),
    ("SimPool1d", {"dim": 16}, (3, 7, 16)),
    ("AttentionPool", {"dim": 16, "num_heads": 2}, (3, 7, 16)),
]


def main(out):
    torch.manual_seed(0)
    outputs = {}
    for name, kwargs, shape in LAYERS:
        x = torch.randn(*shape)
        pool = getattr(layers, name)(**kwargs).eval()
        scripted = torch.jit.script(pool)
        outputs[name] = scripted(x)
        outputs[name + "_batch5"] = scripted(torch.randn(5, *shape[1:]))
    outputs["repeat_half"] = layers.RepeatHalf()(torch.ones(2, 2))
    torch.save(outputs, out)


if __name__ == "__main__":
    main(sys.argv[1])
