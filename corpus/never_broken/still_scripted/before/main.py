"""The gate stays TorchScript for the C++ server; the encoder is traced for the Python service."""
import io
import sys

import torch

from gating import build


def main(out):
    gate = build("gate", 8).eval()
    # Loaded by the C++ server: stays TorchScript for now.
    scripted_gate = torch.jit.script(gate)  # ts2export: ignore[TSX302]
    buffer = io.BytesIO()
    torch.jit.save(scripted_gate, buffer)

    encoder = build("encoder", 8).eval()
    traced = torch.jit.trace(encoder, torch.ones(4, 8))

    torch.manual_seed(1)
    xs = [torch.randn(3, 8), -torch.rand(5, 8)]
    results = {}
    with torch.no_grad():
        for i, x in enumerate(xs):
            results[f"gate{i}"] = scripted_gate(x)
            results[f"encoder{i}"] = traced(x)
    results["saved_bytes"] = buffer.getbuffer().nbytes > 0
    torch.save(results, out)


if __name__ == "__main__":
    main(sys.argv[1])
