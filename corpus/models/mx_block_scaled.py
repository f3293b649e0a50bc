"""An MX-style block-scaled linear layer: float8_e4m3fn weights with float8_e8m0fnu scales, one
scale (a power of two) per block of 32 weights, dequantised in forward."""

from typing import Tuple

import torch
from torch import nn

LEGACY = "script"
BLOCK = 32


class MXLinear(nn.Module):
    def __init__(self, out_features: int = 16, in_features: int = 64) -> None:
        super().__init__()
        w = torch.randn(out_features, in_features)
        blocks = w.reshape(out_features, in_features // BLOCK, BLOCK)
        amax = blocks.abs().amax(dim=-1).clamp(min=1e-12)
        exp = torch.floor(torch.log2(amax)) - 8  # e4m3 max is 448 = 1.75 * 2**8
        scale = torch.exp2(exp)
        self.register_buffer("weight_fp8", (blocks / scale.unsqueeze(-1)).reshape_as(w).to(torch.float8_e4m3fn))
        self.register_buffer("scale_e8m0", scale.to(torch.float8_e8m0fnu))
        self.register_buffer("bias", torch.randn(out_features))
        self.out_features = out_features
        self.in_features = in_features
        self.block = BLOCK

    def dequantized_weight(self) -> torch.Tensor:
        w = self.weight_fp8.to(torch.float32).reshape(self.out_features, self.in_features // self.block, self.block)
        s = self.scale_e8m0.to(torch.float32).unsqueeze(-1)
        return (w * s).reshape(self.out_features, self.in_features)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return torch.nn.functional.linear(x, self.dequantized_weight(), self.bias)


class MXModel(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.l1 = MXLinear(32, 64)
        self.l2 = MXLinear(8, 32)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.l2(torch.relu(self.l1(x)))


def build():
    torch.manual_seed(5)
    model = MXModel().eval()
    return model, (torch.randn(2, 64),), ["float32[B=1..8,64]"]


class MXQuantize(nn.Module):
    """MX quantisation of activations: float8_e4m3fn elements and one float8_e8m0fnu scale per block
    of 32. Its outputs are float8, so it exercises verify's float8 comparison (ExecuTorch has no
    float8 kernels, so it is not lowered)."""

    def __init__(self) -> None:
        super().__init__()
        self.block = BLOCK

    def forward(self, x: torch.Tensor) -> Tuple[torch.Tensor, torch.Tensor]:
        blocks = x.reshape(x.shape[0], -1, self.block)
        amax = blocks.abs().amax(dim=-1).clamp(min=1e-12)
        scale = torch.exp2(torch.floor(torch.log2(amax)) - 8)
        q = (blocks / scale.unsqueeze(-1)).reshape(x.shape).to(torch.float8_e4m3fn)
        return q, scale.to(torch.float8_e8m0fnu)


def build_quantizer():
    return MXQuantize().eval(), (torch.randn(2, 64),), ["float32[B=1..8,64]"]
