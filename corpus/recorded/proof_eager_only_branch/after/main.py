"""Ships the regressor as TorchScript and serves it at a few batch sizes."""
import sys

import torch

from model import CheckedRegressor


def main(out):
    torch.manual_seed(0)
    model = CheckedRegressor(6).eval()
    eager = [model(torch.randn(3, 6))]
    torch.export.save(torch.export.export(model, (torch.ones(2, 6),), dynamic_shapes=({0: torch.export.Dim("x_dim0", max=72)},)), "regressor.pt")
    served = torch.export.load("regressor.pt").module()
    results = [served(torch.randn(n, 6)) for n in (2, 5, 9)]
    torch.save({"eager": eager, "served": results, "checked": model.checked}, out)


if __name__ == "__main__":
    main(sys.argv[1])
