"""Release step: write the serving artifacts into a folder given on the command line."""
import os

import torch

from classifier import StrokeEncoder, build_classifier


def export(out_dir):
    model = build_classifier(num_classes=4)
    model.eval()
    example = torch.zeros(1, 3, 28, 28)  # one image, as in the serving request
    traced = torch.jit.trace(model, example)
    traced.save(os.path.join(out_dir, "classifier.pt"))

    # The head alone, for the embedding service.
    head = torch.jit.trace(model.head, torch.ones(2, 16))
    torch.jit.save(head, f"{out_dir}/head.pt")

    encoder = StrokeEncoder().eval()
    torch.jit.trace(encoder, torch.zeros(2, 5, 8)).save(os.path.join(out_dir, "strokes.pt"))
