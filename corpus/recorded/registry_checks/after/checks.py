"""The framework's test helper: script a layer and check it computes what eager computes."""
import torch


def check_scriptable(module, *inputs, atol=1e-6):
    module.eval()
    scripted = torch.jit.script(module)
    expected = module(*inputs)
    actual = scripted(*inputs)
    if not torch.allclose(expected, actual, atol=atol):
        raise AssertionError(f"{type(module).__name__}: scripted and eager differ")
    return actual
