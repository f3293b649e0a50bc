"""Ships the tagger as TorchScript and serves the shipped file on batches of several sizes and lengths."""
import sys

import torch

from tagger import PackedTagger


def make_batch(batch_size, max_len):
    lengths = torch.randint(1, max_len + 1, (batch_size,))
    lengths[0] = max_len  # the longest sequence sets the padded length
    tokens = torch.randint(1, 120, (batch_size, max_len))
    positions = torch.arange(max_len).unsqueeze(0)
    tokens = tokens.masked_fill(positions >= lengths.unsqueeze(1), 0)
    return tokens, lengths


def main(out):
    torch.manual_seed(0)
    model = PackedTagger().eval()
    scripted = torch.jit.script(model)
    scripted.save("tagger.pt")
    served = torch.jit.load("tagger.pt")
    outputs = []
    with torch.no_grad():
        for batch_size, max_len in ((4, 9), (1, 5), (6, 13)):
            tokens, lengths = make_batch(batch_size, max_len)
            tags, classes = served(tokens, lengths)
            outputs.append({"tags": tags, "classes": classes, "predicted": tags.argmax(-1) * (tokens != 0)})
    torch.save(outputs, out)


if __name__ == "__main__":
    main(sys.argv[1])
