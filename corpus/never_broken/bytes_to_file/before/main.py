import sys
import tempfile

import torch

from scoring.store import WIDTH, read, write


def main(out):
    torch.manual_seed(0)
    outputs = {}
    with tempfile.TemporaryDirectory() as root:
        pool_path, ranker_path = write(root)
        pool, ranker = read(pool_path), read(ranker_path)
        for n in (2, 6):
            feats = torch.rand(3, n, WIDTH)
            pooled = pool(feats)
            mask = torch.ones(3, dtype=torch.bool)
            mask[1] = False
            value, rank = ranker(pooled, mask)
            outputs[f"value{n}"] = value
            outputs[f"rank{n}"] = rank
    torch.save(outputs, out)


if __name__ == "__main__":
    main(sys.argv[1])
