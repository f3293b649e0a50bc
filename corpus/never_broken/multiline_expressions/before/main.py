"""Describe patches with a scripted kernel (only called here: it may run eager) and serve a traced,
saved and reloaded descriptor; every TorchScript call spans several lines with comments inside."""
import os
import sys
import tempfile

import torch

from descriptors import Descriptor, VonMisesKernel, load_patches


def describe(seeds, device="cpu", dtype=torch.float32):
    kernel = torch.jit.script(
        VonMisesKernel(
            patch_size=8,  # pixels
        ).to(device, dtype).eval()
    )
    return [kernel(load_patches(seed) - 0.3 * seed) for seed in seeds]


def serve(folder):
    torch.manual_seed(0)
    model = Descriptor(
        dims=16,  # output size
    ).eval()
    traced = torch.jit.trace(
        model,
        (torch.rand(
            4, 3, 8, 8),),  # a batch
    )
    path = os.path.join(folder, "descriptor.pt")
    torch.jit.save(
        traced,  # the artifact
        path,
    )
    loaded = torch.jit.load(
        path,
        map_location="cpu",  # served on CPU
    )
    return [loaded(torch.rand(n, 3, 8, 8) - 0.5 * k) for k, n in enumerate((2, 5))]


def main(out):
    with tempfile.TemporaryDirectory() as tmp:
        outputs = {"kernel": describe((1, 2)), "served": serve(tmp)}
    torch.save(outputs, out)


if __name__ == "__main__":
    main(sys.argv[1])
