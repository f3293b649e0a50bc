"""Release step: write the serving artifacts into a folder given on the command line."""
import os

import torch

from classifier import StrokeEncoder, build_classifier
from torch.export import Dim


def export(out_dir):
    model = build_classifier(num_classes=4)
    model.eval()
    example = torch.zeros(1, 3, 28, 28)  # one image, as in the serving request
    # ts2export: example doubled where it has size 1, which export would fix, while the model is called at other sizes (dim 0: sizes 1, 3, 5; serve.py:15)
    traced = torch.export.export(model, (torch.cat([example] * 2),), dynamic_shapes=({0: Dim.DYNAMIC, 1: Dim.AUTO, 2: Dim.AUTO, 3: Dim.AUTO},))
    torch.export.save(traced, os.path.join(out_dir, "classifier.pt"))

    # The head alone, for the embedding service.
    head = torch.export.export(model.head, (torch.ones(2, 16),), dynamic_shapes=({0: Dim.AUTO, 1: Dim.AUTO},))
    torch.export.save(head, f"{out_dir}/head.pt")

    encoder = StrokeEncoder().eval()
    torch.jit.trace(encoder, torch.zeros(2, 5, 8)).save(os.path.join(out_dir, "strokes.pt"))
