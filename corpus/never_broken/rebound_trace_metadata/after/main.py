import sys
import tempfile

import torch

from export import export
from serve import classify, load


def main(out):
    torch.manual_seed(0)
    with tempfile.TemporaryDirectory() as d:
        model, labels = load(export(d))
        results = {}
        for n in (1, 3):
            tokens = torch.randint(0, 50, (4 * n,))
            offsets = torch.arange(0, 4 * n, 4)
            names, logits = classify(model, labels, tokens, offsets)
            results[f"names{n}"] = names
            results[f"logits{n}"] = logits
    torch.save(results, out)


if __name__ == "__main__":
    main(sys.argv[1])
