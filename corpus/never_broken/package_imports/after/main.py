"""A package (`ranker/`) that imports its own modules by their package names: the writer and the
reader of one artifact live in different modules and find its path through a third."""
import sys
import tempfile

import torch

from ranker.publish import publish
from ranker.serve import Ranker

CFG = {"name": "ranker", "version": 3, "dim": 12, "hidden": 24, "seed": 5}


def main(out):
    torch.manual_seed(0)
    with tempfile.TemporaryDirectory() as root:
        publish(CFG, root)
        ranker = Ranker(root, CFG)
        outputs = {f"rows{n}": ranker.rank(torch.randn(n, 12)) for n in (1, 3, 8)}
    torch.save(outputs, out)


if __name__ == "__main__":
    main(sys.argv[1])
