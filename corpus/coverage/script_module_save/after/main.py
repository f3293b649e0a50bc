import sys
import tempfile
from pathlib import Path

import torch

from normalizer import fit_and_save


def main(out: str) -> None:
    torch.manual_seed(0)
    data = torch.randn(64, 5) * 3 + 1
    with tempfile.TemporaryDirectory() as tmp:
        fit_and_save(data, Path(tmp))
        normalize = torch.export.load(str(Path(tmp) / "normalizer.pt")).module()
        batch = torch.arange(20, dtype=torch.float32).reshape(4, 5)
        torch.save([normalize(batch), normalize(torch.ones(7, 5))], out)


if __name__ == "__main__":
    main(sys.argv[1])
