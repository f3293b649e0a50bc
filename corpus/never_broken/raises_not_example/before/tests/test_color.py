import io
import os
import unittest

import pytest
import torch

from augment.color import Normalize, Posterize, RandomGamma


def make_normalize():
    return Normalize([0.5, 0.4, 0.3], [0.2, 0.2, 0.25])


def test_rejects_unbatched():
    op = make_normalize()
    with pytest.raises(ValueError):
        op(torch.rand(3, 8, 8))


def test_scriptable():
    op = make_normalize()
    op_jit = torch.jit.script(op)
    buf = io.BytesIO()
    torch.jit.save(op_jit, buf)
    assert len(buf.getvalue()) > 0
    return buf.getvalue()


class TestGamma(unittest.TestCase):
    def test_rejects_integer_images(self):
        op = RandomGamma(0.5)
        self.assertRaises(TypeError, op, torch.ones(2, 3, 4, 4, dtype=torch.uint8))

    def test_gamma_jit(self, folder="."):
        op = RandomGamma(2.0)
        op_jit = torch.jit.script(op)
        path = os.path.join(folder, "gamma.pt")
        torch.jit.save(op_jit, path)
        return path


def test_posterize_rejects_float():
    with pytest.raises(TypeError):
        Posterize(4)(torch.rand(1, 3, 8, 8))


def test_posterize_scriptable():
    scripted = torch.jit.script(Posterize(4))
    assert scripted is not None
