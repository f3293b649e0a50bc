"""A joint sequence tagger and classifier over padded token batches: embeddings, a bidirectional
GRU run on packed sequences (so padding never enters the recurrence), a per-token tag head and a
per-sequence head on the final hidden states."""
from typing import Tuple

import torch
from torch import Tensor, nn
from torch.nn.utils.rnn import pack_padded_sequence, pad_packed_sequence


class PackedTagger(nn.Module):
    def __init__(self, vocab_size: int = 120, embed_dim: int = 16, hidden: int = 24,
                 num_tags: int = 7, num_classes: int = 4, padding_idx: int = 0):
        super().__init__()
        self.embed = nn.Embedding(vocab_size, embed_dim, padding_idx=padding_idx)
        self.rnn = nn.GRU(embed_dim, hidden, num_layers=1, batch_first=True, bidirectional=True)
        self.tags = nn.Linear(2 * hidden, num_tags)
        self.classify = nn.Linear(2 * hidden, num_classes)

    def forward(self, tokens: Tensor, lengths: Tensor) -> Tuple[Tensor, Tensor]:
        emb = self.embed(tokens)
        packed = pack_padded_sequence(emb, lengths, batch_first=True, enforce_sorted=False)
        out, hidden = self.rnn(packed)
        padded, _ = pad_packed_sequence(out, batch_first=True, total_length=tokens.shape[1])
        tag_logits = self.tags(padded)
        # hidden: (num_directions, batch, hidden), already in the batch's original order
        final = torch.cat([hidden[-2], hidden[-1]], dim=1)
        return tag_logits, self.classify(final)
