from .color import Normalize, rgb_to_gray

__all__ = ["Normalize", "rgb_to_gray"]
