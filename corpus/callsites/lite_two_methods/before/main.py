"""A mobile model with two entry points (trace_module), written for the lite interpreter and run
through both methods at other batch sizes."""
import sys

import torch
from torch import nn
from torch.jit.mobile import _load_for_lite_interpreter


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
    traced = torch.jit.trace_module(model, {"forward": features, "encode": features})
    traced._save_for_lite_interpreter("speech.ptl")

    app = _load_for_lite_interpreter("speech.ptl")
    torch.manual_seed(1)
    batch = torch.randn(6, 12)
    hidden = app.run_method("encode", batch)
    logits = app(batch)
    torch.save({"hidden": hidden, "logits": logits}, out)


if __name__ == "__main__":
    main(sys.argv[1])
