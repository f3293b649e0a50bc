import sys
import tempfile

import torch

from sampler import Denoiser, export_denoiser, sample


def main(out):
    torch.manual_seed(0)
    with tempfile.TemporaryDirectory() as folder:
        denoiser = export_denoiser(Denoiser().eval(), folder)
        torch.manual_seed(1)
        first = sample(denoiser)
        reloaded = torch.export.load(folder + "/denoiser.pt").module()
        torch.manual_seed(1)
        second = sample(reloaded)
    torch.save({"first": first, "second": second}, out)


if __name__ == "__main__":
    main(sys.argv[1])
