import json

import torch
import torch.export.passes


def load(path: str):
    extra = {"meta.json": ""}
    model = torch.export.passes.move_to_device_pass(torch.export.load(path, extra_files=extra), "cpu").module()
    meta = json.loads(extra["meta.json"])
    return model, meta["labels"]


def classify(model, labels, tokens, offsets):
    with torch.inference_mode():
        logits = model(tokens, offsets)
    return [labels[i] for i in logits.argmax(-1).tolist()], logits
