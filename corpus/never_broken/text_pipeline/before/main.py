"""Builds the text pipeline, ships it as TorchScript with its vocabulary, and serves raw strings."""
import sys

import torch

from text import BagClassifier, TextPipeline, build_vocab

WORDS = "the a cat dog sat on mat ran fast slow red blue big small house tree".split()
BATCHES = [
    ["The cat sat on the mat", "a dog ran"],
    ["Red house", "the big blue tree stood by the slow small house today", "zebra", ""],
    ["Dog"],
]


def main(out):
    torch.manual_seed(0)
    vocab = build_vocab(WORDS)
    pipeline = TextPipeline(vocab, BagClassifier(len(vocab)), max_len=8).eval()
    scripted = torch.jit.script(pipeline)
    scripted.save("pipeline.pt")
    served = torch.jit.load("pipeline.pt")
    results = []
    with torch.no_grad():
        for texts in BATCHES:
            ids, logits = served(texts)
            results.append([ids, logits])
        ids, logits = scripted(BATCHES[0])
        results.append([ids, logits])
    torch.save(results, out)


if __name__ == "__main__":
    main(sys.argv[1])
