"""Checks that the selection operator scripts (as the library's tests do) and pools with it."""

import sys

import torch

from graphkit.select import SelectTopK


def main(out: str) -> None:
    torch.manual_seed(0)
    pool = SelectTopK(8)
    scripted = torch.jit.script(pool)
    assert "SelectOutput" in str(scripted.graph)  # the scripted operator returns the scripted class
    x = torch.randn(6, 8)
    eager, compiled = pool(x), scripted(x)
    torch.save([eager.node_index, eager.weight, compiled.node_index, compiled.weight, compiled.num_nodes], out)


if __name__ == "__main__":
    main(sys.argv[1])
