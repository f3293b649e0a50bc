import torch
from torch import Tensor, nn

from asrkit.utils import is_jit_tracing


class ActivationBalancer(nn.Module):
    """Rescales activations while training; a no-op under TorchScript and in inference."""

    def __init__(self, channels: int, max_abs: float = 10.0):
        super().__init__()
        self.max_abs = max_abs
        self.register_buffer("count", torch.zeros((), dtype=torch.int64))

    def forward(self, x: Tensor) -> Tensor:
        if torch.jit.is_scripting() or not x.requires_grad or is_jit_tracing():
            return x
        self.count += 1
        return x.clamp(-self.max_abs, self.max_abs)


class ScaledLinear(nn.Linear):
    def __init__(self, *args, initial_scale: float = 1.0, **kwargs):
        super().__init__(*args, **kwargs)
        with torch.no_grad():
            self.weight.mul_(initial_scale)

    def forward(self, x: Tensor) -> Tensor:
        if not is_jit_tracing():
            return nn.functional.linear(x, self.weight, self.bias)
        return torch.matmul(x, self.weight.t()) + self.bias
