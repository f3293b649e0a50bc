"""Run the deploy script, then serve batches of several sizes and image sizes."""
import sys

import torch

import deploy
import serve


def main(out):
    deploy.deploy()
    service = serve.Service()
    torch.manual_seed(1)
    results = {}
    for batch, size in [(2, 16), (7, 16), (3, 24)]:
        probs, labels = service.predict(torch.randn(batch, 3, size, size))
        results[f"{batch}x{size}"] = {"probs": probs, "labels": labels}
    torch.save(results, out)


if __name__ == "__main__":
    main(sys.argv[1])
