"""An autoencoder whose service calls its halves separately: encode on the client, decode on the server."""
import torch
from torch import nn


class Codec(nn.Module):
    def __init__(self, features: int = 10, code: int = 4):
        super().__init__()
        self.encoder = nn.Sequential(nn.Linear(features, 8), nn.SiLU(), nn.Linear(8, code))
        self.decoder = nn.Sequential(nn.Linear(code, 8), nn.SiLU(), nn.Linear(8, features))

    @torch.jit.export
    def encode(self, x: torch.Tensor) -> torch.Tensor:
        return torch.tanh(self.encoder(x))

    @torch.jit.export
    def decode(self, z: torch.Tensor) -> torch.Tensor:
        return self.decoder(z)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.decode(self.encode(x))


def build(path: str) -> None:
    codec = Codec().eval()
    scripted = torch.jit.script(codec)
    scripted.save(path)
