"""Scripts the encoder, ships it, and serves the three methods from the shipped file."""
import sys

import torch

from model import Encoder


def main(out):
    torch.manual_seed(0)
    scripted = torch.jit.script(Encoder().eval())
    scripted.save("encoder.pt")
    served = torch.jit.load("encoder.pt")
    tokens = torch.randint(0, 50, (3, 7))
    with torch.no_grad():
        encoded = served(tokens)
        pooled = served.encode_pooled(tokens)
        reordered = served.reorder_encoder_out(encoded, torch.tensor([2, 0, 1]))
    torch.save([encoded, pooled, reordered], out)


if __name__ == "__main__":
    main(sys.argv[1])
