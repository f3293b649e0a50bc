"""Builds a translation model, compiles it the way a toolkit does (traced encoder, scripted decoder
step, the generator scripted around them) and decodes two source batches."""
import sys

import torch

from model import DecoderStep, Encoder
from search import BeamSearch

VOCAB = 12


def main(out):
    torch.manual_seed(0)
    encoder = Encoder(VOCAB).eval()
    step = DecoderStep(VOCAB, eos_bias=0.4).eval()
    example = torch.randint(3, VOCAB, (2, 5))
    traced_encoder = torch.jit.trace(encoder, example)
    scripted_step = torch.jit.script(step)
    generator = torch.jit.script(BeamSearch(traced_encoder, scripted_step, VOCAB, beam=3, max_len=10))
    batches = [
        torch.tensor([[5, 6, 7, 8, 9, 10], [4, 4, 11, 3, 0, 0]]),
        torch.tensor([[3, 9, 0], [7, 8, 6], [10, 0, 0]]),
    ]
    results = []
    with torch.no_grad():
        for src in batches:
            tokens, scores = generator(src)
            results.append({"tokens": tokens, "scores": scores, "steps": tokens.size(2) - 1})
    torch.save(results, out)


if __name__ == "__main__":
    main(sys.argv[1])
