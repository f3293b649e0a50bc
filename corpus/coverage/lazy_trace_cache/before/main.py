import sys

import torch

from serving import Ranker, RankingService


def main(out: str) -> None:
    torch.manual_seed(0)
    service = RankingService(Ranker())
    results = {"cold": service.warm()}
    for n in (6, 3, 11):
        results[n] = service(torch.randn(n, 8))
    results["warm"] = service.warm()
    torch.save(results, out)


if __name__ == "__main__":
    main(sys.argv[1])
