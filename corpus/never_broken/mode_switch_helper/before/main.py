"""Checks ChannelMix in every mode the helper offers, and a radial basis used eagerly."""
import sys
import tempfile

import torch

import eqkit
from checks.modes import module_with_mode


def main(out):
    torch.manual_seed(0)
    x = torch.randn(4, 12)
    results = {}
    with tempfile.TemporaryDirectory() as tmp:
        for mode in ("eager", "script", "trace"):
            mix = eqkit.ChannelMix(4, 3)
            m = module_with_mode(mode, mix, (x,), tmp)
            results[mode] = m(x)
    radial = eqkit.RadialBasis(6, cutoff=2.0)
    results["radial"] = radial(torch.linspace(0.1, 3.0, 7))
    torch.save(results, out)


if __name__ == "__main__":
    main(sys.argv[1])
