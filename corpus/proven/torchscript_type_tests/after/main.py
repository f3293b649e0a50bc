"""Runs the scorer and its own tests (one of which checks that it is TorchScript)."""
import sys

import torch

from scorer import compile_scorer
from tests import test_scorer


def main(out):
    scorer = compile_scorer()
    test_scorer.test_it_is_a_script_module()
    test_scorer.test_scores()
    torch.save(scorer(torch.ones(3, 4)), out)


if __name__ == "__main__":
    main(sys.argv[1])
