"""Export, then serve both artifacts."""
import sys
import tempfile

import torch

from export import export_all
from serve import run_scale, run_threshold


def main(out):
    with tempfile.TemporaryDirectory() as folder:
        export_all(folder)
        x = torch.linspace(-1, 1, 12).reshape(3, 4)
        torch.save({"scale": run_scale(folder, x), "threshold": run_threshold(folder, x.abs() + 0.5)}, out)


if __name__ == "__main__":
    main(sys.argv[1])
