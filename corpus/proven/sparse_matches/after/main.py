import sys

import torch

from matcher import MutualMatcher


def main(out):
    torch.manual_seed(0)
    # ts2export: `torch.jit.script(MutualMatcher())` only sped up the calls below; the module runs eager (torch.compile(MutualMatcher()) compiles it again)
    matcher = MutualMatcher()
    torch.save([matcher(torch.rand(4, 4)), matcher(torch.zeros(3, 3))], out)


if __name__ == "__main__":
    main(sys.argv[1])
