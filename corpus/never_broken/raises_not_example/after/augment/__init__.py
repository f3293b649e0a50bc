from .color import Normalize, Posterize, RandomGamma

__all__ = ["Normalize", "Posterize", "RandomGamma"]
