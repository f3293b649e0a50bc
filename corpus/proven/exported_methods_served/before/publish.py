import os

import torch

from retriever import Retriever


def artifact_path(folder: str) -> str:
    return os.path.join(folder, "retriever.pt")


def publish(folder: str) -> str:
    torch.manual_seed(0)
    scripted = torch.jit.script(Retriever().eval())
    path = artifact_path(folder)
    scripted.save(path)
    return path
