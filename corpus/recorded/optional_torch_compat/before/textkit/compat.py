"""Optional dependencies, imported once: the rest of the kit imports them from here."""
try:  # pragma: no cover - depends on the environment
    import torch
    import torch.nn

    has_torch = True
except ImportError:  # pragma: no cover
    torch = None
    has_torch = False
