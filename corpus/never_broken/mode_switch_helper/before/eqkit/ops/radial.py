import torch


def _bessel(r: torch.Tensor, n: int) -> torch.Tensor:
    k = torch.arange(1, n + 1, dtype=r.dtype, device=r.device)
    return torch.sin(k * torch.pi * r.unsqueeze(-1)) / r.unsqueeze(-1).clamp_min(1e-6)


class RadialBasis(torch.nn.Module):
    """Expands distances on a Bessel basis; never compiled by TorchScript in this kit."""

    def __init__(self, n: int = 8, cutoff: float = 5.0):
        super().__init__()
        self.n = n
        self.cutoff = cutoff

    def forward(self, r: torch.Tensor) -> torch.Tensor:
        basis = _bessel(r / self.cutoff, self.n)
        if not torch.jit.is_scripting():
            basis = basis * (r < self.cutoff).unsqueeze(-1).to(basis.dtype)
        return basis
