#!/usr/bin/env python3
"""What the proof in `ts2export record` costs, against exporting the same models by hand.

For each model (generated here: an MLP, a small CNN, a transformer encoder layer, an embedding-bag
text scorer, a GRU tagger) a program scripts it and calls it on a few batch sizes. The benchmark
runs that program three ways and prints the wall seconds of each:

- plain (`python prog.py`);
- `ts2export record --no-prove -- python prog.py`;
- `ts2export record -- python prog.py` (the proof at exit: export with the recorded inputs and
  dynamic shapes, run on the recorded samples against TorchScript, save/load round trip);

then the proof's own seconds (the verdict's ``seconds``, measured in the recorded process) and what a
person would run to check the same export by hand, in a process of its own: ``torch.export.export``
with the same dynamic shapes, the exported program and the scripted module on the same inputs,
``assert_close``, ``torch.export.save``/``load`` (timed inside the script, imports excluded). The
ratio proof / by hand says what the automation costs over doing it yourself.

    python scripts/bench_prove.py [--repeat 3]

Asserts nothing but that every model is proven; the figures go to docs/speed.md.
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
import tempfile
import textwrap
import time
from pathlib import Path

MODELS = {
    "mlp": ("""
        class Model(nn.Module):
            def __init__(self):
                super().__init__()
                self.net = nn.Sequential(nn.Linear(64, 256), nn.ReLU(), nn.Linear(256, 256), nn.ReLU(), nn.Linear(256, 10))

            def forward(self, x):
                return self.net(x)
        """, "torch.randn(b, 64)"),
    "cnn": ("""
        class Model(nn.Module):
            def __init__(self):
                super().__init__()
                self.body = nn.Sequential(nn.Conv2d(3, 16, 3, padding=1), nn.BatchNorm2d(16), nn.ReLU(),
                                          nn.Conv2d(16, 32, 3, stride=2, padding=1), nn.ReLU(),
                                          nn.AdaptiveAvgPool2d(1), nn.Flatten(), nn.Linear(32, 10))

            def forward(self, x):
                return self.body(x)
        """, "torch.randn(b, 3, 32, 32)"),
    "transformer": ("""
        class Model(nn.Module):
            def __init__(self):
                super().__init__()
                self.layer = nn.TransformerEncoderLayer(64, 4, 128, batch_first=True, dropout=0.0)
                self.head = nn.Linear(64, 5)

            def forward(self, x):
                return self.head(self.layer(x).mean(1))
        """, "torch.randn(b, 12, 64)"),
    "embedding_bag": ("""
        class Model(nn.Module):
            def __init__(self):
                super().__init__()
                self.embed = nn.EmbeddingBag(1000, 32, mode="mean")
                self.out = nn.Linear(32, 3)

            def forward(self, tokens):
                return self.out(self.embed(tokens))
        """, "torch.randint(0, 1000, (b, 16))"),
    "gru": ("""
        class Model(nn.Module):
            def __init__(self):
                super().__init__()
                self.gru = nn.GRU(16, 32, batch_first=True)
                self.out = nn.Linear(32, 4)

            def forward(self, x):
                y, _ = self.gru(x)
                return self.out(y)
        """, "torch.randn(b, 10, 16)"),
}

PROGRAM = '''
import torch
from torch import nn

{model}

torch.manual_seed(0)
scripted = torch.jit.script(Model().eval())
for b in (2, 4, 8):
    with torch.no_grad():
        scripted({example})
'''

BY_HAND = '''
import json
import time

import torch
from torch import nn

{model}

torch.manual_seed(0)
model = Model().eval()
scripted = torch.jit.script(model)
inputs = [{example} for b in (2, 4, 8)]
start = time.perf_counter()
batch = torch.export.Dim("batch", min=2, max=8)
ep = torch.export.export(model, (inputs[0],), dynamic_shapes=({{0: batch}},))
module = ep.module()
with torch.no_grad():
    for x in inputs:
        torch.testing.assert_close(module(x), scripted(x))
import io
buf = io.BytesIO()
torch.export.save(ep, buf)
buf.seek(0)
loaded = torch.export.load(buf).module()
with torch.no_grad():
    torch.testing.assert_close(loaded(inputs[-1]), scripted(inputs[-1]))
print(json.dumps({{"seconds": time.perf_counter() - start}}))
'''


def timed(cmd: list[str], cwd: Path) -> tuple[float, subprocess.CompletedProcess]:
    start = time.perf_counter()
    proc = subprocess.run(cmd, cwd=cwd, capture_output=True, text=True, timeout=900)
    return time.perf_counter() - start, proc


def measure(name: str, folder: Path, repeat: int) -> dict:
    model, example = MODELS[name]
    body = textwrap.dedent(model).strip()
    (folder / "prog.py").write_text(PROGRAM.format(model=body, example=example))
    (folder / "by_hand.py").write_text(BY_HAND.format(model=body, example=example))
    py = sys.executable
    rows: dict[str, list[float]] = {"plain": [], "record_no_prove": [], "record": [], "proof": [], "by_hand": []}
    for _ in range(repeat):
        rows["plain"].append(timed([py, "prog.py"], folder)[0])
        rows["record_no_prove"].append(timed([py, "-m", "ts2export", "record", "-q", "--no-prove", "-o", "r0.json", "--", py, "prog.py"], folder)[0])
        seconds, proc = timed([py, "-m", "ts2export", "record", "-q", "-o", "r1.json", "--", py, "prog.py"], folder)
        rows["record"].append(seconds)
        (site,) = json.loads((folder / "r1.json").read_text())["sites"]
        proof = site.get("proof") or {}
        if proof.get("verdict") != "proven":
            raise SystemExit(f"{name}: not proven: {proof}\n{proc.stderr[-2000:]}")
        rows["proof"].append(proof["seconds"])
        _, proc = timed([py, "by_hand.py"], folder)
        if proc.returncode != 0:
            raise SystemExit(f"{name}: the by-hand export failed:\n{proc.stderr[-2000:]}")
        rows["by_hand"].append(json.loads(proc.stdout.strip().splitlines()[-1])["seconds"])
    return {k: statistics.median(v) for k, v in rows.items()}


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--repeat", type=int, default=3, help="runs per figure (the median is shown)")
    parser.add_argument("--models", default=",".join(MODELS))
    args = parser.parse_args(argv)
    print("| model | plain s | record --no-prove s | record s | proof s (in the process) | by hand s | proof / by hand |")
    print("|---|---|---|---|---|---|---|")
    for name in args.models.split(","):
        with tempfile.TemporaryDirectory(prefix="ts2export-bench-prove-") as tmp:
            m = measure(name, Path(tmp), args.repeat)
        print(f"| {name} | {m['plain']:.2f} | {m['record_no_prove']:.2f} | {m['record']:.2f} | {m['proof']:.2f} | "
              f"{m['by_hand']:.2f} | {m['proof'] / m['by_hand']:.2f} |", flush=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
