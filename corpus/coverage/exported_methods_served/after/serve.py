"""Loads the codec artifact and serves its methods."""
import torch
from torch.export.pt2_archive._package import load_pt2


def serve(path: str) -> dict:
    service = {name: ep.module() for name, ep in load_pt2(path).exported_programs.items()}
    batch = torch.linspace(-1, 1, 30).reshape(3, 10)
    codes = service["encode"](batch)
    grid = torch.zeros(5, 4)
    return {"codes": codes, "decoded": service["decode"](grid), "round_trip": service["model"](batch)}
