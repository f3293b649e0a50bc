"""Compiles the network the framework's way and runs it."""
import sys

import torch

from fwlib.jit import compile_module
from model import Network


def main(out):
    torch.manual_seed(0)
    net = compile_module(Network().eval())
    with torch.no_grad():
        torch.save([net(torch.randn(n, 8)) for n in (4, 6)], out)


if __name__ == "__main__":
    main(sys.argv[1])
