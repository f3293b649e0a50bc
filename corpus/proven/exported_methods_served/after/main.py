import sys
import tempfile

import torch

from publish import publish
from serve import SearchService


def main(out):
    with tempfile.TemporaryDirectory() as folder:
        service = SearchService(publish(folder))
        g = torch.Generator().manual_seed(1)
        results = []
        for n_queries, n_docs in ((3, 5), (2, 7)):
            queries = torch.randn(n_queries, 16, generator=g)
            docs = torch.randn(n_docs, 16, generator=g)
            results.append(service.rank(queries, docs))
        torch.save(results, out)


if __name__ == "__main__":
    main(sys.argv[1])
