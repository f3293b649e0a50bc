"""An autoencoder whose service calls its halves separately: encode on the client, decode on the server."""
import torch
from torch import nn
from torch.export import Dim
from torch.export.pt2_archive._package import package_pt2


class Codec(nn.Module):
    def __init__(self, features: int = 10, code: int = 4):
        super().__init__()
        self.encoder = nn.Sequential(nn.Linear(features, 8), nn.SiLU(), nn.Linear(8, code))
        self.decoder = nn.Sequential(nn.Linear(code, 8), nn.SiLU(), nn.Linear(8, features))

    def encode(self, x: torch.Tensor) -> torch.Tensor:
        return torch.tanh(self.encoder(x))

    def decode(self, z: torch.Tensor) -> torch.Tensor:
        return self.decoder(z)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.decode(self.encode(x))


def build(path: str) -> None:
    codec = Codec().eval()
    class MethodAsModule(torch.nn.Module):
        """One method of a module as `forward`, so that torch.export can export it (added by ts2export)."""

        def __init__(self, module, method):
            super().__init__()
            self.module = module
            self.method = method

        def forward(self, *args):
            return getattr(self.module, self.method)(*args)

    scripted = {"model": torch.export.export(codec, (torch.ones(3, 10),), dynamic_shapes=({0: Dim.AUTO, 1: Dim.AUTO},)), "decode": torch.export.export(MethodAsModule(codec, "decode"), (torch.ones(5, 4),), dynamic_shapes=(({0: Dim.AUTO, 1: Dim.AUTO},),)), "encode": torch.export.export(MethodAsModule(codec, "encode"), (torch.ones(3, 10),), dynamic_shapes=(({0: Dim.AUTO, 1: Dim.AUTO},),))}
    package_pt2(path, exported_programs=scripted)
