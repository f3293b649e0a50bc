"""A text classification pipeline that takes raw strings: tokenize, look up, pad, classify."""
from typing import Dict, List, Tuple

import torch
from torch import nn


class BagClassifier(nn.Module):
    """The tensor core: embeddings averaged over the non-pad positions, then a linear head."""

    def __init__(self, vocab_size: int, width: int = 16, classes: int = 3, pad_id: int = 0):
        super().__init__()
        self.pad_id = pad_id
        self.embed = nn.Embedding(vocab_size, width, padding_idx=pad_id)
        self.head = nn.Linear(width, classes)

    def forward(self, ids: torch.Tensor) -> torch.Tensor:
        mask = (ids != self.pad_id).unsqueeze(-1).to(torch.float32)
        summed = (self.embed(ids) * mask).sum(dim=1)
        counts = mask.sum(dim=1).clamp(min=1.0)
        return self.head(summed / counts)


class TextPipeline(nn.Module):
    """Strings in, (token ids, logits) out, the way serving code ships a model with its vocabulary."""

    def __init__(self, vocab: Dict[str, int], core: nn.Module, max_len: int = 8,
                 pad_id: int = 0, unk_id: int = 1):
        super().__init__()
        self.vocab = vocab
        self.core = core
        self.max_len = max_len
        self.pad_id = pad_id
        self.unk_id = unk_id

    def tokenize(self, text: str) -> List[int]:
        ids: List[int] = []
        for word in text.lower().split():
            ids.append(self.vocab.get(word, self.unk_id))
        return ids[: self.max_len]

    def forward(self, texts: List[str]) -> Tuple[torch.Tensor, torch.Tensor]:
        rows: List[List[int]] = [self.tokenize(t) for t in texts]
        longest = 1
        for row in rows:
            longest = max(longest, len(row))
        batch = torch.full((len(rows), longest), self.pad_id, dtype=torch.long)
        for i, row in enumerate(rows):
            if len(row) > 0:
                batch[i, : len(row)] = torch.tensor(row, dtype=torch.long)
        return batch, self.core(batch)


def build_vocab(words: List[str]) -> Dict[str, int]:
    vocab: Dict[str, int] = {"<pad>": 0, "<unk>": 1}
    for w in words:
        if w not in vocab:
            vocab[w] = len(vocab)
    return vocab
