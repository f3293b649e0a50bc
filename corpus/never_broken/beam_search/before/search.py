"""Beam search over an encoder and a decoder step, stopping when every beam has emitted EOS."""
from typing import Dict, Optional, Tuple

import torch
from torch import Tensor, nn


class BeamSearch(nn.Module):
    def __init__(self, encoder: nn.Module, step: nn.Module, vocab: int, beam: int = 3, max_len: int = 10,
                 bos: int = 1, eos: int = 2):
        super().__init__()
        self.encoder = encoder
        self.step = step
        self.vocab = vocab
        self.beam = beam
        self.max_len = max_len
        self.bos = bos
        self.eos = eos

    def reorder_incremental_state(
        self, state: Dict[str, Dict[str, Optional[Tensor]]], order: Tensor
    ) -> Dict[str, Dict[str, Optional[Tensor]]]:
        out: Dict[str, Dict[str, Optional[Tensor]]] = {}
        for key, inner in state.items():
            moved: Dict[str, Optional[Tensor]] = {}
            for name, value in inner.items():
                if value is None:
                    moved[name] = None
                else:
                    moved[name] = value.index_select(0, order)
            out[key] = moved
        return out

    def forward(self, src_tokens: Tensor) -> Tuple[Tensor, Tensor]:
        bsz = src_tokens.size(0)
        beam = self.beam
        encoder_out, encoder_padding_mask = self.encoder(src_tokens)
        encoder_out = encoder_out.repeat_interleave(beam, dim=0)
        encoder_padding_mask = encoder_padding_mask.repeat_interleave(beam, dim=0)
        tokens = torch.full((bsz * beam, 1), self.bos, dtype=torch.long)
        scores = torch.zeros(bsz, beam)
        finished = torch.zeros(bsz * beam, dtype=torch.bool)
        # A finished hypothesis may only extend with EOS, at no cost.
        eos_only = torch.full((self.vocab,), float("-inf"))
        eos_only[self.eos] = 0.0
        base = (torch.arange(bsz) * beam).unsqueeze(1)
        incremental_state: Dict[str, Dict[str, Optional[Tensor]]] = {}
        for step in range(self.max_len):
            lprobs, incremental_state = self.step(tokens, encoder_out, encoder_padding_mask, incremental_state)
            lprobs = torch.where(finished.unsqueeze(1), eos_only.unsqueeze(0), lprobs)
            candidates = scores.view(-1, 1) + lprobs
            if step == 0:  # all beams of a sentence are alike: expand the first only
                candidates = candidates.view(bsz, beam, -1)
                candidates[:, 1:, :] = float("-inf")
            top_scores, top_index = candidates.view(bsz, -1).topk(beam, dim=1)
            beam_index = torch.div(top_index, self.vocab, rounding_mode="floor")
            next_tokens = top_index.remainder(self.vocab)
            order = (base + beam_index).view(-1)
            tokens = torch.cat([tokens.index_select(0, order), next_tokens.view(-1, 1)], dim=1)
            finished = finished.index_select(0, order) | next_tokens.view(-1).eq(self.eos)
            incremental_state = self.reorder_incremental_state(incremental_state, order)
            scores = top_scores
            if bool(finished.all()):
                break
        return tokens.view(bsz, beam, -1), scores
