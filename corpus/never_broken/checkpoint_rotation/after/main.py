"""Trains with checkpoints, then evaluates the newest one."""
import sys
from pathlib import Path

import torch

from evaluate import evaluate
from train import train


def main(out):
    folder = Path("checkpoints")
    train(folder)
    kept = sorted(p.name for p in folder.glob("*.pt"))
    torch.save({"scores": evaluate(folder), "kept": kept}, out)


if __name__ == "__main__":
    main(sys.argv[1])
