import os
import sys
import tempfile

import torch

from export_model import export


def main(out: str) -> None:
    torch.manual_seed(0)
    with tempfile.TemporaryDirectory() as tmp:
        path = export(tmp)
        model = torch.export.load(os.path.join(tmp, "classifier.pt")).module()
        image = torch.linspace(0, 1, 3 * 24 * 24).reshape(1, 3, 24, 24)
        torch.save(model(image), out)


if __name__ == "__main__":
    main(sys.argv[1])
