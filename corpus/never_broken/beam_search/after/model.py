"""A tiny attention encoder-decoder, with the decoder run one step at a time over an incremental state."""
import math
from typing import Dict, Optional, Tuple

import torch
import torch.nn.functional as F
from torch import Tensor, nn


class Encoder(nn.Module):
    def __init__(self, vocab: int, width: int = 16, pad: int = 0):
        super().__init__()
        self.pad = pad
        self.embed = nn.Embedding(vocab, width, padding_idx=pad)
        self.proj = nn.Linear(width, width)

    def forward(self, src_tokens: Tensor) -> Tuple[Tensor, Tensor]:
        encoder_out = torch.tanh(self.proj(self.embed(src_tokens)))
        encoder_padding_mask = src_tokens.eq(self.pad)
        return encoder_out, encoder_padding_mask


class DecoderStep(nn.Module):
    """One decoding step: the last token attends to the cached keys/values of the earlier steps
    (kept in ``incremental_state``) and to the encoder output; returns log-probs and the new state."""

    def __init__(self, vocab: int, width: int = 16, eos: int = 2, eos_bias: float = 0.0):
        super().__init__()
        self.width = width
        self.embed = nn.Embedding(vocab, width)
        self.q = nn.Linear(width, width)
        self.k = nn.Linear(width, width)
        self.v = nn.Linear(width, width)
        self.mix = nn.Linear(2 * width, width)
        self.out = nn.Linear(width, vocab)
        with torch.no_grad():
            self.out.bias[eos] += eos_bias

    def forward(
        self,
        prev_output_tokens: Tensor,
        encoder_out: Tensor,
        encoder_padding_mask: Tensor,
        incremental_state: Dict[str, Dict[str, Optional[Tensor]]],
    ) -> Tuple[Tensor, Dict[str, Dict[str, Optional[Tensor]]]]:
        x = self.embed(prev_output_tokens[:, -1:])
        query = self.q(x)
        key = self.k(x)
        value = self.v(x)
        saved = incremental_state.get("self_attn")
        if saved is not None:
            prev_key = saved["prev_key"]
            prev_value = saved["prev_value"]
            if prev_key is not None:
                key = torch.cat([prev_key, key], dim=1)
            if prev_value is not None:
                value = torch.cat([prev_value, value], dim=1)
        cache: Dict[str, Optional[Tensor]] = {"prev_key": key, "prev_value": value}
        new_state: Dict[str, Dict[str, Optional[Tensor]]] = {"self_attn": cache}
        weights = torch.softmax(query @ key.transpose(1, 2) / math.sqrt(self.width), dim=-1)
        x = x + weights @ value
        scores = (x @ encoder_out.transpose(1, 2)).masked_fill(encoder_padding_mask.unsqueeze(1), float("-inf"))
        context = torch.softmax(scores, dim=-1) @ encoder_out
        hidden = torch.tanh(self.mix(torch.cat([x, context], dim=-1)))
        return F.log_softmax(self.out(hidden[:, 0]), dim=-1), new_state
