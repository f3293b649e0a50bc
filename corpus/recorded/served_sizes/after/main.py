"""Scripts the tagger and serves requests whose sizes come from the request stream (a config here):
nothing in the source shows the shapes the model is called with."""
import json
import sys

import torch

from model import Tagger

REQUESTS = json.loads('[{"batch": 2, "length": 7}, {"batch": 3, "length": 7}, {"batch": 5, "length": 11},'
                      ' {"batch": 2, "length": 11}, {"batch": 3, "length": 11}]')


def main(out):
    torch.manual_seed(0)
    tagger = torch.export.export(Tagger().eval(), (torch.zeros(2, 7, dtype=torch.long),), dynamic_shapes=({0: torch.export.Dim("ids_dim0", max=64), 1: torch.export.Dim("ids_dim1", max=88)},)).module()
    generator = torch.Generator().manual_seed(1)
    results = []
    with torch.no_grad():
        for request in REQUESTS:
            ids = torch.randint(0, 40, (request["batch"], request["length"]), generator=generator)
            results.append(tagger(ids))
    torch.save(results, out)


if __name__ == "__main__":
    main(sys.argv[1])
