from .classifier import PatchClassifier

__all__ = ["PatchClassifier"]
