"""Trains nothing: builds three members, ships each as TorchScript, then serves the ensemble of the
loaded members, scripted again, in float64."""
import sys

import torch

from potential import Ensemble, PairPotential


def main(out):
    torch.manual_seed(0)
    paths = []
    for i in range(3):
        member = PairPotential().double()
        path = f"member{i}.pt"
        torch.jit.script(member).save(path)
        paths.append(path)
    members = [torch.jit.load(p) for p in paths]
    ensemble = torch.jit.script(Ensemble(members))
    results = []
    for n in (4, 6):
        positions = torch.randn(n, 3, dtype=torch.float64)
        results.append(ensemble(positions))
    torch.save(results, out)


if __name__ == "__main__":
    main(sys.argv[1])
