"""Export into a temporary folder, then serve requests of several batch sizes and lengths."""
import sys
import tempfile

import torch

from export_model import export
from serve import Predictor


def main(out):
    with tempfile.TemporaryDirectory() as model_dir:
        export(model_dir)
        predictor = Predictor(model_dir)
        torch.manual_seed(1)
        results = {f"batch{n}": predictor.predict(torch.rand(n, 3, 28, 28)) for n in (1, 3, 5)}
        results["logits"] = predictor.logits(torch.rand(7, 16))
        results["strokes"] = [predictor.encode(torch.rand(2, t, 8)) for t in (5, 9)]
    torch.save(results, out)


if __name__ == "__main__":
    main(sys.argv[1])
