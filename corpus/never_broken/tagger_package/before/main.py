"""Publishes the tagger, serves one row and a batch from another module, runs the package's tests."""
import sys
import tempfile

import torch

from tagger.evaluate import evaluate
from tagger.model import SPREADS
from tagger.publish import publish
from tagger.serve import Service
from tagger.tests import test_tagger

CFG = test_tagger.CFG


def main(out):
    torch.manual_seed(0)
    with tempfile.TemporaryDirectory() as root:
        publish(CFG, root)
        service = Service(root, CFG)
        outputs = {}
        for n in (1, 5):
            probs, kept = service.tag(torch.randn(n, CFG["dim"]) * 3)
            outputs[f"probs{n}"] = probs
            outputs[f"kept{n}"] = kept
    outputs["predicted"] = evaluate(CFG, [torch.randn(n, CFG["dim"]) for n in (1, 2, 7)])
    test_tagger.test_scripts_to_a_script_module()
    test_tagger.test_outputs_are_tags()
    outputs["reported"] = len(SPREADS)
    torch.save(outputs, out)


if __name__ == "__main__":
    main(sys.argv[1])
