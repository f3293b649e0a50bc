"""A mobile model with two entry points (trace_module), written for the lite interpreter and run
through both methods at other batch sizes."""
import sys

import torch
from torch import nn
import pathlib
from executorch.backends.xnnpack.partition.xnnpack_partitioner import XnnpackPartitioner
from executorch.exir import to_edge_transform_and_lower
from executorch.runtime import Runtime
from torch.export import Dim


class SpeechModel(nn.Module):
    def __init__(self):
        super().__init__()
        self.encoder = nn.Linear(12, 16)
        self.decoder = nn.Linear(16, 5)

    def forward(self, features):
        return self.decoder(self.encode(features))

    def encode(self, features):
        return torch.tanh(self.encoder(features))


def main(out):
    torch.manual_seed(0)
    model = SpeechModel().eval()
    features = torch.randn(2, 12)
    class MethodAsModule(torch.nn.Module):
        """One method of a module as `forward`, so that torch.export can export it (added by ts2export)."""

        def __init__(self, module, method):
            super().__init__()
            self.module = module
            self.method = method

        def forward(self, *args):
            return getattr(self.module, self.method)(*args)

    traced = {"forward": torch.export.export(model, (features,), dynamic_shapes=({0: Dim.AUTO(max=64), 1: Dim.AUTO(max=96)},)), "encode": torch.export.export(MethodAsModule(model, "encode"), (features,), dynamic_shapes=(({0: Dim.AUTO(max=64), 1: Dim.AUTO(max=96)},),))}
    pathlib.Path("speech.ptl").write_bytes(to_edge_transform_and_lower(traced, partitioner=[XnnpackPartitioner()]).to_executorch().buffer)

    app = Runtime.get().load_program("speech.ptl")
    torch.manual_seed(1)
    batch = torch.randn(6, 12)
    hidden = app.load_method("encode").execute([batch])[0]
    logits = app.load_method("forward").execute([batch])[0]
    torch.save({"hidden": hidden, "logits": logits}, out)


if __name__ == "__main__":
    main(sys.argv[1])
