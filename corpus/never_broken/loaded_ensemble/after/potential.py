"""An interatomic potential: energies from pair distances, forces as their negative gradient."""
from typing import List

import torch
from torch import nn


class PairPotential(nn.Module):
    def __init__(self, hidden: int = 16):
        super().__init__()
        self.net = nn.Sequential(nn.Linear(1, hidden), nn.SiLU(), nn.Linear(hidden, 1))

    def forward(self, positions: torch.Tensor) -> torch.Tensor:
        distances = torch.cdist(positions, positions)
        mask = ~torch.eye(positions.shape[0], dtype=torch.bool)
        return self.net(distances[mask].unsqueeze(-1)).sum()


class Ensemble(nn.Module):
    def __init__(self, members: List[nn.Module]):
        super().__init__()
        self.members = nn.ModuleList(members)

    def forward(self, positions: torch.Tensor) -> torch.Tensor:
        positions = positions.requires_grad_(True)
        energies = []
        for member in self.members:
            energies.append(member(positions))
        energy = torch.stack(energies).mean()
        grads = torch.autograd.grad([energy], [positions])
        forces = grads[0]
        assert forces is not None
        return torch.cat([energy.reshape(1), -forces.reshape(-1)])
