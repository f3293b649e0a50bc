"""The classic deployment script: trace on one image, save, serve batches."""
import sys

import torch
from torch import nn
from torch.export import Dim


def build():
    torch.manual_seed(0)
    return nn.Sequential(nn.Conv2d(3, 6, 3), nn.ReLU(), nn.AdaptiveAvgPool2d(1), nn.Flatten(), nn.Linear(6, 2)).eval()


def export(model, path):
    example = torch.rand(1, 3, 32, 32)
    # ts2export: example doubled where it has size 1, which export would fix, while the model is called at other sizes (dim 0: sizes 4, 7; main.py:21)
    torch.export.save(torch.export.export(model, (torch.cat([example] * 2),), dynamic_shapes=({0: Dim.DYNAMIC, 1: Dim.AUTO, 2: Dim.DYNAMIC, 3: Dim.DYNAMIC},)), path)


def serve(path, batches):
    model = torch.export.load(path).module()
    with torch.no_grad():
        return [model(images) for images in batches]


def main(out):
    export(build(), "classifier.pt")
    torch.manual_seed(1)
    batches = [torch.rand(4, 3, 32, 32), torch.rand(7, 3, 40, 40)]
    torch.save(serve("classifier.pt", batches), out)


if __name__ == "__main__":
    main(sys.argv[1])
