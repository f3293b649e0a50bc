from .base import SelectOutput
from .topk import SelectTopK

__all__ = ["SelectOutput", "SelectTopK"]
