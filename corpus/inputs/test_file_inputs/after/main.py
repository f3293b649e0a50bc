"""Export, then run the artifact on images read from a request (shapes known only at run time)."""
import json
import sys

import torch

from export import export


def main(out):
    export("detector.pt")
    model = torch.export.load("detector.pt").module()
    request = json.loads('{"images": [[1, 1, 9, 13], [4, 1, 32, 32]]}')
    torch.manual_seed(3)
    torch.save([model(torch.rand(*shape)) for shape in request["images"]], out)


if __name__ == "__main__":
    main(sys.argv[1])
