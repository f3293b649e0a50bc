"""Trains nothing: builds a seeded classifier, exports it, serves two batches."""
import sys

from textkit.compat import torch
from textkit.model import BagClassifier, export_classifier
from textkit.serve import BACKEND, Labeler


def main(out):
    torch.manual_seed(0)
    path = export_classifier(BagClassifier(), "classifier.pt")
    labeler = Labeler(path)
    first = ["the cat sat on the mat", "a dog ran fast"]
    second = ["the dog sat", "a cat ran on a mat slow", "mat"]
    torch.save({"first": labeler.scores(first), "second": labeler.scores(second),
                "labels": labeler.label(first + second), "backend": BACKEND}, out)


if __name__ == "__main__":
    main(sys.argv[1])
