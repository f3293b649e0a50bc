"""A signal library's tests trace its functions the way outside code does: with a named tuple of
filter taps made by a factory, with a list of coefficients returned by another traced function,
with a keyword argument at the call, and inside `pytest.warns` (the test expects the tracer's
warnings). None of these traces can become an export as it is: each stays, with a finding."""
import sys
import warnings
from typing import List, NamedTuple

import pytest
import torch


class Taps(NamedTuple):
    low: torch.Tensor
    high: torch.Tensor

    @staticmethod
    def make(n: int, dtype: torch.dtype) -> "Taps":
        low = torch.linspace(0.1, 1.0, n, dtype=dtype)
        return Taps(low, low.flip(0) * -1.0)


def decompose(data: torch.Tensor, taps: Taps) -> List[torch.Tensor]:
    lo = torch.nn.functional.conv1d(data[:, None], taps[0].view(1, 1, -1))
    hi = torch.nn.functional.conv1d(data[:, None], taps[1].view(1, 1, -1))
    return [lo[:, 0], hi[:, 0]]


def recompose(coeffs):
    return coeffs[0] + coeffs[1]


def scaled(data: torch.Tensor, gain: torch.Tensor) -> torch.Tensor:
    return data * gain


def energy(data: torch.Tensor) -> torch.Tensor:
    total = float(data.pow(2).sum())  # a Python float: the trace bakes it in and warns
    return data / total


def make_signal(batch: int, length: int) -> torch.Tensor:
    return torch.sin(torch.arange(batch * length, dtype=torch.float64).view(batch, length) / 7.0)


def main(out):
    data = make_signal(3, 64)
    taps = Taps.make(4, torch.float64)
    traced_dec = torch.jit.trace(decompose, (data, taps))
    coeffs = traced_dec(data, taps)
    traced_rec = torch.jit.trace(recompose, (coeffs,))
    gain = torch.tensor(2.0, dtype=torch.float64)
    traced_scaled = torch.jit.trace(scaled, (data, gain))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        with pytest.warns(Warning):
            traced_energy = torch.jit.trace(energy, (data,))
    outputs = {
        "dec": traced_dec(data, taps),
        "rec": traced_rec(coeffs),
        "scaled": traced_scaled(data, gain=gain),
        "energy": traced_energy(data),
    }
    torch.save(outputs, out)


if __name__ == "__main__":
    main(sys.argv[1])
