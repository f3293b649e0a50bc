"""Matches descriptors with scripted modules, as the library's own checks do, and serves a saved matcher."""

import sys

import torch

from featkit import DescriptorMatcher, ScoreGate
from torch.export import Dim


def main(out: str) -> None:
    torch.manual_seed(0)
    matcher = DescriptorMatcher()
    matcher_jit = torch.jit.script(matcher)
    gate = ScoreGate()
    gate_jit = torch.export.export(gate, (torch.ones(4),), dynamic_shapes=({0: Dim.AUTO},)).module()
    a, b = torch.rand(6, 8), torch.rand(7, 8)
    results = [matcher_jit(a, b), matcher(a, b), matcher_jit(a * 10, b)]  # some matches, then none
    scores = torch.rand(4)
    results += [gate_jit(scores * 0.4), gate_jit(scores + 0.6)]
    torch.jit.save(matcher_jit, "matcher.pt")
    results.append(torch.jit.load("matcher.pt")(a, b))
    torch.save(results, out)


if __name__ == "__main__":
    main(sys.argv[1])
