"""Layout helpers shared by the serving models."""
import torch


def is_wide(x: torch.Tensor) -> bool:
    return x.shape[1] > 4
