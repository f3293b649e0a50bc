"""Runs the layer library's scriptability checks over its registry, then pools a batch eagerly."""
import sys

import torch

from checks import check_scriptable
from layers import Gate, Pooler, Residual

REGISTRY = {
    "gate": lambda: Gate(8),
    "residual": lambda: Residual(8),
}


def main(out):
    torch.manual_seed(0)
    results = {}
    for name, build in REGISTRY.items():
        results[name] = check_scriptable(build(), torch.randn(3, 8))
    pooler = Pooler(8)
    batch = torch.randn(4, 5, 8)
    results["pooled"] = pooler(batch)
    results["described"] = pooler.describe(batch)
    torch.save(results, out)


if __name__ == "__main__":
    main(sys.argv[1])
