import json
import os
import sys
import tempfile

import torch
from torch import nn

from detector import Detector, export_torchscript, fuse


def main(out):
    torch.manual_seed(0)
    model = Detector()
    for m in model.modules():
        if isinstance(m, nn.BatchNorm2d):
            m.running_mean.uniform_(-0.5, 0.5)
            m.running_var.uniform_(0.5, 1.5)
    model.eval()
    images = torch.rand(2, 3, 32, 32)
    unfused = model(images)
    model = fuse(model)
    with tempfile.TemporaryDirectory() as folder:
        path = os.path.join(folder, "detector.torchscript")
        ts = export_torchscript(model, path, ["car", "person", "bike", "dog"])
        served = ts(images)
        extra = {"config.txt": ""}
        loaded = torch.jit.load(path, _extra_files=extra)
        names = json.loads(extra["config.txt"])["names"]
        big = loaded(torch.rand(3, 3, 32, 32))
        one = loaded(torch.rand(1, 3, 32, 32))
    print("fused equal:", torch.allclose(served, unfused, atol=1e-5), "classes:", names)
    torch.save({"unfused": unfused.detach(), "served": served.detach(), "big": big.detach(), "one": one.detach(),
                "names": names}, out)


if __name__ == "__main__":
    main(sys.argv[1])
