"""Writes artifacts through an in-memory buffer (as an uploader would), reads them from open files."""
import io
import os

import torch

from scoring.nets import make

WIDTH = 10


def write(root: str) -> list:
    paths = []
    pool = torch.jit.trace(make("pool"), example_inputs=(torch.rand(1, 4, WIDTH),))
    buf = io.BytesIO()
    torch.jit.save(pool, buf)
    pool_path = os.path.join(root, "pool.pt")
    with open(pool_path, "wb") as fh:
        fh.write(buf.getvalue())
    paths.append(pool_path)
    ranker = torch.jit.script(make("ranker", WIDTH))
    ranker_path = os.path.join(root, "ranker.pt")
    ranker.save(ranker_path)
    paths.append(ranker_path)
    return paths


def read(path: str):
    with open(path, "rb") as fh:
        return torch.jit.load(fh)
