"""A framework's compile mode: classes say whether they are traced or scripted, and `compile_module`
walks a model and compiles each marked submodule with inputs the class makes for itself."""
import torch
from torch import nn

_MODE = "__fw_compile_mode__"


def compile_mode(mode: str):
    def mark(cls):
        setattr(cls, _MODE, mode)
        return cls
    return mark


def compile_module(module: nn.Module) -> nn.Module:
    for name, child in list(module.named_children()):
        setattr(module, name, compile_module(child))
    mode = getattr(type(module), _MODE, None)
    if mode == "script":
        return torch.export.export(module, (torch.ones(4, 8),), dynamic_shapes=({0: torch.export.Dim("x_dim0", max=64)},)).module()
    if mode == "trace":
        return torch.jit.trace(module, module._make_tracing_inputs())
    return module
