import torch


def is_jit_tracing() -> bool:
    """True under torch.jit.trace only (False while scripting, where is_tracing cannot be asked)."""
    if torch.jit.is_scripting():
        return False
    elif torch.jit.is_tracing():
        return True
    return False
