"""Patch descriptors, laid out the way a formatter leaves long calls: arguments over several lines,
comments inside them."""
import torch
from torch import nn

COEFFS = (0.5, 0.25, 0.125)


class VonMisesKernel(nn.Module):
    def __init__(self, patch_size: int, coeffs=COEFFS):
        super().__init__()
        self.patch_size = patch_size
        self.register_buffer("weights", torch.tensor(coeffs))

    def forward(self, patches: torch.Tensor) -> torch.Tensor:
        # Data-dependent branch (was `if (patches.mean() < 0.5):`): torch.cond keeps both branches for torch.export.
        def _true_branch(patches):
            patches = patches + 0.5
            return patches
        def _false_branch(patches):
            return patches.clone()
        patches = torch.cond(patches.mean()  # a dark batch is brightened first
            < 0.5, _true_branch, _false_branch, (patches,))
        angles = torch.linspace(0.0, 3.14159, self.patch_size, dtype=patches.dtype)
        basis = torch.stack([torch.cos(angles * (i + 1)) for i in range(self.weights.shape[0])])
        return patches.mean(dim=1) @ (self.weights @ basis).unsqueeze(-1)


class Descriptor(nn.Module):
    def __init__(self, dims: int):
        super().__init__()
        self.proj = nn.Linear(8 * 8 * 3, dims)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.proj(
            x.flatten(1)  # one row a patch
        )


def load_patches(seed: int) -> torch.Tensor:
    g = torch.Generator().manual_seed(seed)
    return torch.rand(3, 1, 8, 8, generator=g)
