"""Trains the regressor and keeps the last three checkpoints, each a scripted copy of the model."""
import os
import re
from pathlib import Path

import torch

from model import Regressor

KEEP = 3


def checkpoint_path(folder: Path, epoch: int) -> Path:
    return folder / f"regressor-epoch{epoch:03d}.pt"


def prune(folder: Path) -> None:
    found = sorted(folder.glob("regressor-epoch*.pt"), key=lambda p: int(re.search(r"epoch(\d+)", p.name).group(1)))
    for old in found[:-KEEP]:
        os.remove(old)


def train(folder: Path, epochs: int = 7, save_every: int = 2) -> Regressor:
    torch.manual_seed(0)
    model = Regressor()
    optimizer = torch.optim.SGD(model.parameters(), lr=0.05)
    data = torch.randn(64, 6)
    target = data.sum(dim=1)
    folder.mkdir(parents=True, exist_ok=True)
    for epoch in range(1, epochs + 1):
        for batch in range(0, 64, 16):
            optimizer.zero_grad()
            loss = torch.nn.functional.mse_loss(model(data[batch:batch + 16]), target[batch:batch + 16])
            loss.backward()
            optimizer.step()
        if epoch % save_every == 0 or epoch == epochs:
            model.eval()
            torch.jit.save(torch.jit.script(model), str(checkpoint_path(folder, epoch)))
            model.train()
            prune(folder)
    return model
