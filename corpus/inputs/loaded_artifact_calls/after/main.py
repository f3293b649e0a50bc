"""Publish, then score batches of token ids of several lengths with the published file."""
import os
import sys
import tempfile

import torch

from publish import publish


def score(path):
    model = torch.export.load(path).module()
    outputs = []
    for length in (4, 9):
        tokens = torch.randint(0, 50, (3, length))
        outputs.append(model(tokens))
    return outputs


def main(out):
    folder = tempfile.mkdtemp()
    path = os.path.join(folder, "scorer.pt")
    publish(path)
    torch.manual_seed(2)
    torch.save(score(path), out)


if __name__ == "__main__":
    main(sys.argv[1])
