"""The package's own tests: every operation must stay scriptable."""
import torch

import imgops


def check_scriptable(op, *args):
    """Script any operation (a function or a module) and compare with the eager one."""
    scripted = torch.jit.script(op)
    expected = op(*args)
    actual = scripted(*args)
    torch.testing.assert_close(actual, expected)
    return actual


def test_rgb_to_gray_jit():
    op = imgops.rgb_to_gray
    op_jit = torch.jit.script(op)
    image = torch.rand(2, 3, 4, 4)
    torch.testing.assert_close(op_jit(image), op(image))
    return op_jit(image)


def test_normalize_scriptable():
    return check_scriptable(imgops.Normalize(0.5, 0.25), torch.rand(2, 3, 4, 4))


def test_gray_scriptable():
    return check_scriptable(imgops.rgb_to_gray, torch.rand(1, 3, 5, 5))
