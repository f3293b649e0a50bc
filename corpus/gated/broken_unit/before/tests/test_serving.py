"""Golden tests of the deployed artifacts: values recorded from what production serves."""
import tempfile

import pytest
import torch

from export import export_all
from serve import run_scale, run_threshold


@pytest.fixture(scope="module")
def folder():
    with tempfile.TemporaryDirectory() as d:
        export_all(d)
        yield d


def test_scale_shape(folder):
    assert run_scale(folder, torch.ones(5, 4)).shape == (5, 4)


def test_threshold_matches_production(folder):
    # Production shifts every row, whatever its width (the artifact was traced on rows of 4).
    x = torch.ones(5, 6)
    torch.testing.assert_close(run_threshold(folder, x), x - 1)
