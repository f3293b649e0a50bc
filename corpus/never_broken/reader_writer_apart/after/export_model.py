"""Release step: write the serving artifacts into a folder given on the command line."""
import os

import torch

from classifier import build_classifier
from torch.export import Dim


def export(out_dir):
    model = build_classifier(num_classes=4)
    model.eval()
    example = torch.zeros(1, 3, 28, 28)  # one image, as in the serving request
    traced = torch.jit.trace(model, example)
    traced.save(os.path.join(out_dir, "classifier.pt"))

    # The head alone, for the embedding service.
    head = torch.export.export(model.head, (torch.ones(2, 16),), dynamic_shapes=({0: Dim.AUTO, 1: Dim.AUTO},))
    torch.export.save(head, f"{out_dir}/head.pt")
