import sys

import torch

from packing import Denoiser, pack


def main(out: str) -> None:
    torch.manual_seed(0)
    model = Denoiser().eval()
    payload, restored = pack(model)
    with torch.no_grad():
        outputs = [restored(torch.randn(5, 6)), restored(torch.randn(2, 6)), len(payload) > 0]
    torch.save(outputs, out)


if __name__ == "__main__":
    main(sys.argv[1])
