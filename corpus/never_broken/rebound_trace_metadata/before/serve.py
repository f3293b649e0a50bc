import json

import torch


def load(path: str):
    extra = {"meta.json": ""}
    model = torch.jit.load(path, map_location="cpu", _extra_files=extra)
    meta = json.loads(extra["meta.json"])
    return model, meta["labels"]


def classify(model, labels, tokens, offsets):
    with torch.inference_mode():
        logits = model(tokens, offsets)
    return [labels[i] for i in logits.argmax(-1).tolist()], logits
