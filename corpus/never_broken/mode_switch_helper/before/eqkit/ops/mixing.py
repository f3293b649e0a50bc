import torch


class ChannelMix(torch.nn.Module):
    """Mixes channels with a learned matrix, per segment of the last dimension."""

    def __init__(self, channels: int, segments: int):
        super().__init__()
        self.segments = segments
        self.weight = torch.nn.Parameter(torch.randn(segments, channels, channels) / channels**0.5)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        parts = x.reshape(x.shape[0], self.segments, -1)
        return torch.einsum("bsc,scd->bsd", parts, self.weight).reshape(x.shape[0], -1)

    @torch.jit.ignore
    def extra_repr(self) -> str:
        return f"segments={self.segments}"
