"""Deploys the classifier, then serves logits and pooled embeddings from the artifact."""

import sys

import torch

from deploy import export


def main(out: str) -> None:
    export("classifier.pt")
    served = torch.jit.load("classifier.pt")
    torch.manual_seed(1)
    results = []
    for batch in (torch.randn(3, 7, 16), torch.randn(2, 9, 16)):
        feats = served.forward_features(batch)
        results.append(served(batch))
        results.append(served.forward_head(feats, True))  # the embedding for retrieval
        results.append(served.forward_head(feats, False))
    torch.save(results, out)


if __name__ == "__main__":
    main(sys.argv[1])
