"""Feature scaling written as a ScriptModule in the TorchScript 1.0 days."""
import torch


class Scaler(torch.nn.Module):
    __constants__ = ["eps"]

    def __init__(self, factor: float):
        super().__init__()
        self.factor = factor
        self.eps = 1e-6

    def forward(self, x):
        return x * self.factor / (x.abs().amax(-1, keepdim=True) + self.eps)
