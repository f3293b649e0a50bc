"""The zoo's own check, written the way model zoos write it: every model by name, scripted, then
called on a batch built from its input size."""
import sys

import torch

from zoo import create_model, list_models
from torch.export import Dim

INPUT_SIZE = (3, 16, 16)


def check_model(name: str, batch_size: int = 2):
    model = create_model(name)
    model.eval()
    model.set_grad_checkpointing(False) if hasattr(model, "set_grad_checkpointing") else None
    scripted = torch.export.export(model, (torch.ones((batch_size, *INPUT_SIZE)),), dynamic_shapes=({0: Dim.AUTO},)).module()
    x = torch.randn((batch_size, *INPUT_SIZE))
    with torch.no_grad():
        return scripted(x)


def main(out: str) -> None:
    torch.manual_seed(0)
    outputs = {}
    for name in list_models():
        torch.manual_seed(1)
        outputs[name] = check_model(name)
    torch.save(outputs, out)


if __name__ == "__main__":
    main(sys.argv[1])
