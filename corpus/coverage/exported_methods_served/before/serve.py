"""Loads the codec artifact and serves its methods."""
import torch


def serve(path: str) -> dict:
    service = torch.jit.load(path)
    batch = torch.linspace(-1, 1, 30).reshape(3, 10)
    codes = service.encode(batch)
    grid = torch.zeros(5, 4)
    return {"codes": codes, "decoded": service.decode(grid), "round_trip": service(batch)}
