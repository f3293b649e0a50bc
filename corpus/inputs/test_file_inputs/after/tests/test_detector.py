import torch

from detector import EdgeDetector


def test_output_shape():
    model = EdgeDetector()
    assert model(torch.rand(2, 1, 16, 16)).shape == (2, 16, 16)
    assert model(torch.rand(3, 1, 24, 20)).shape == (3, 24, 20)
