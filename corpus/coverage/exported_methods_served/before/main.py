import os
import sys
import tempfile

import torch

from codec import build
from serve import serve


def main(out: str) -> None:
    torch.manual_seed(0)
    with tempfile.TemporaryDirectory() as tmp:
        path = os.path.join(tmp, "codec.pt")
        build(path)
        torch.save(serve(path), out)


if __name__ == "__main__":
    main(sys.argv[1])
