import sys

import torch

from exportable import Encoder, Summary


def main(out: str) -> None:
    torch.manual_seed(0)
    encoder = Encoder().eval()
    compiled = encoder.compiled()
    x = torch.randn(3, 4)
    summary = Summary()
    torch.save([compiled(x), summary(x), summary.describe(x)], out)


if __name__ == "__main__":
    main(sys.argv[1])
