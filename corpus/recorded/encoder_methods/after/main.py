"""Scripts the encoder, ships it, and serves the three methods from the shipped file."""
import sys

import torch

from model import Encoder
from torch.export import Dim
from torch.export.pt2_archive._package import load_pt2, package_pt2


def main(out):
    torch.manual_seed(0)
    class MethodAsModule(torch.nn.Module):
        """One method of a module as `forward`, so that torch.export can export it (added by ts2export)."""

        def __init__(self, module, method):
            super().__init__()
            self.module = module
            self.method = method

        def forward(self, *args):
            return getattr(self.module, self.method)(*args)

    scripted_module = Encoder().eval()
    scripted = {"model": torch.export.export(scripted_module, (torch.full((3, 7), 3, dtype=torch.long),), dynamic_shapes=({0: Dim.AUTO, 1: Dim.AUTO},)), "encode_pooled": torch.export.export(MethodAsModule(scripted_module, "encode_pooled"), (torch.full((3, 7), 3, dtype=torch.long),), dynamic_shapes=(({0: Dim.AUTO, 1: Dim.AUTO},),)), "reorder_encoder_out": torch.export.export(MethodAsModule(scripted_module, "reorder_encoder_out"), (torch.ones(3, 7, 16), torch.zeros(3, dtype=torch.long)), dynamic_shapes=(({0: Dim.AUTO, 1: Dim.AUTO, 2: Dim.AUTO}, {0: Dim.AUTO}),))}
    package_pt2("encoder.pt", exported_programs=scripted)
    served = {name: ep.module() for name, ep in load_pt2("encoder.pt").exported_programs.items()}
    tokens = torch.randint(0, 50, (3, 7))
    with torch.no_grad():
        encoded = served["model"](tokens)
        pooled = served["encode_pooled"](tokens)
        reordered = served["reorder_encoder_out"](encoded, torch.tensor([2, 0, 1]))
    torch.save([encoded, pooled, reordered], out)


if __name__ == "__main__":
    main(sys.argv[1])
