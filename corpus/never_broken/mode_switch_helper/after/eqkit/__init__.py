"""A small kit of equivariant-style layers; its operations live in ops/, a folder without an
__init__.py (a namespace portion of the package)."""

from .ops.mixing import ChannelMix
from .ops.radial import RadialBasis

__all__ = ["ChannelMix", "RadialBasis"]
