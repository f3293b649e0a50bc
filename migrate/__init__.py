"""ts2export: move a PyTorch code base off TorchScript."""

__version__ = "0.1.0"
