"""Rules: one TorchScript construct per module, discovered by the engine."""
