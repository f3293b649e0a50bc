"""A keyword-spotting classifier: an LSTM and a linear head, dynamically quantized to int8, scripted
and saved for serving; the service loads it and classifies clips of several lengths."""
import os
import sys
import tempfile

import torch
from torch import nn


class Classifier(nn.Module):
    def __init__(self):
        super().__init__()
        self.rnn = nn.LSTM(8, 16, batch_first=True)
        self.head = nn.Linear(16, 3)

    def forward(self, frames: torch.Tensor) -> torch.Tensor:
        h, _ = self.rnn(frames)
        return self.head(h[:, -1]).softmax(-1)


def publish(folder: str) -> str:
    torch.manual_seed(0)
    model = Classifier().eval()
    quantized = torch.ao.quantization.quantize_dynamic(model, {nn.LSTM, nn.Linear}, dtype=torch.qint8)
    scripted = torch.jit.script(quantized)
    path = os.path.join(folder, "kws.pt")
    scripted.save(path)
    return path


def main(out):
    with tempfile.TemporaryDirectory() as folder:
        service = torch.jit.load(publish(folder))
        torch.manual_seed(1)
        scores = [service(torch.rand(2, n, 8)) for n in (5, 9)]
    torch.save(scores, out)


if __name__ == "__main__":
    main(sys.argv[1])
