"""Serving code in the usual shape: a helper that loads (map_location, .to(device)) and returns the
artifact, a predictor class that calls .eval() on it, and a trace checked with check_inputs."""
import sys

import torch
from torch import nn
import torch.export.passes
from torch.export import Dim


class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.layers = nn.Sequential(nn.Linear(10, 32), nn.GELU(), nn.Dropout(0.2), nn.Linear(32, 2))

    def forward(self, x):
        return self.layers(x).log_softmax(-1)


def build_and_save(path):
    torch.manual_seed(0)
    model = Net().eval()
    example = torch.randn(4, 10)
    traced = torch.export.export(model, (example,), dynamic_shapes=({0: Dim.DYNAMIC, 1: Dim.AUTO},))
    torch.export.save(traced, path)


def load_model(path, device="cpu"):
    model = torch.export.passes.move_to_device_pass(torch.export.load(path), device).module()
    model = model.to(device)
    return model


class Predictor:
    def __init__(self, path):
        self.model = load_model(path)

    def __call__(self, x):
        with torch.no_grad():
            return self.model(x)


def main(out):
    build_and_save("net.pt")
    predictor = Predictor("net.pt")
    torch.manual_seed(1)
    outputs = {f"batch{b}": predictor(torch.randn(b, 10)) for b in (4, 9, 2)}
    model = load_model("net.pt")
    outputs["direct"] = model(torch.ones(3, 10))
    torch.save(outputs, out)


if __name__ == "__main__":
    main(sys.argv[1])
