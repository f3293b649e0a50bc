"""Write the mobile program, then run it from Python the way the app's tests do."""
import sys

import torch

import deploy
from executorch.runtime import Runtime


def main(out):
    deploy.deploy("spotter.ptl")
    spotter = Runtime.get().load_program("spotter.ptl").load_method("forward")
    torch.manual_seed(1)
    results = {}
    for batch, frames in [(2, 20), (5, 20), (3, 33)]:
        results[f"{batch}x{frames}"] = spotter.execute([torch.randn(batch, frames, 4)])[0]
    torch.save(results, out)


if __name__ == "__main__":
    main(sys.argv[1])
