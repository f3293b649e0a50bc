"""A tagger exported by config from a batch-1 example, then served from another module at the
batch sizes traffic brings; paths from pathlib and os.path.join with f-strings."""
import sys
import tempfile
from pathlib import Path

import torch

from export import export
from serve import Server

CFG = {"name": "tagger-v3", "dim": 16, "tags": 5, "seed": 7}


def main(out):
    torch.manual_seed(0)
    with tempfile.TemporaryDirectory() as tmp:
        export(CFG, Path(tmp))
        server = Server(tmp, CFG["name"])
        outputs = {f"batch{n}": server.predict(torch.randn(n, 16)) for n in (1, 4, 7)}
    torch.save(outputs, out)


if __name__ == "__main__":
    main(sys.argv[1])
