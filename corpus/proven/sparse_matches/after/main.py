import sys

import torch

from matcher import MutualMatcher


def main(out):
    torch.manual_seed(0)
    matcher = torch.jit.script(MutualMatcher())
    torch.save([matcher(torch.rand(4, 4)), matcher(torch.zeros(3, 3))], out)


if __name__ == "__main__":
    main(sys.argv[1])
