import torch


class SearchService:
    """Loads the published artifact and ranks documents for a batch of queries."""

    def __init__(self, path: str):
        self.model = torch.jit.load(path)

    def rank(self, queries: torch.Tensor, docs: torch.Tensor) -> torch.Tensor:
        qe = self.model.encode_query(queries)
        de = self.model.encode_doc(docs)
        return self.model.score(qe, de).argsort(dim=-1, descending=True)
