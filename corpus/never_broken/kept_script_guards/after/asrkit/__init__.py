"""A small speech kit: layers that keep Python-only code away from TorchScript."""
