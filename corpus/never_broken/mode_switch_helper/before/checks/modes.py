"""The test helper: run a module eager, scripted or traced, each compiled one round-tripped
through a file as the kit's tests do."""

import os

import torch


def module_with_mode(mode, module, inputs, tmp_dir):
    if mode == "eager":
        pass
    elif mode == "script":
        module = torch.jit.script(module)
        path = os.path.join(tmp_dir, "scripted.ts")
        torch.jit.save(module, path)
        module = torch.jit.load(path)
    elif mode == "trace":
        module = torch.jit.trace(module, inputs)
        path = os.path.join(tmp_dir, "traced.ts")
        torch.jit.save(module, path)
        module = torch.jit.load(path)
    else:
        raise ValueError(f"unknown mode {mode}")
    return module
