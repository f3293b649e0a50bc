import torch


@torch.jit.script
def confident(probs: torch.Tensor, threshold: float) -> torch.Tensor:
    """The rows whose best tag passes the threshold (how many depends on the data)."""
    keep = probs.max(dim=-1).values > threshold
    rows = keep.nonzero().squeeze(-1)
    if rows.numel() == 0:
        return probs[:0]
    return probs.index_select(0, rows)
