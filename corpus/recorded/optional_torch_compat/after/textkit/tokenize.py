"""Whitespace tokenizer with a fixed vocabulary (no torch needed)."""

VOCAB = {word: i + 1 for i, word in enumerate("the a cat dog sat ran on mat fast slow".split())}


def encode(text, length=6):
    ids = [VOCAB.get(word, 0) for word in text.lower().split()][:length]
    return ids + [0] * (length - len(ids))
