from .matching import DescriptorMatcher, ScoreGate

__all__ = ["DescriptorMatcher", "ScoreGate"]
