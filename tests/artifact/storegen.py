"""A generated model store for the model-store tests and scripts/bench_store.py.

`generate(root, size)` writes tiny TorchScript artifacts from a dozen model families (traced,
scripted and frozen; float32, float64, bfloat16), their inputs (sidecar files for most, a manifest
for some), artifacts without inputs and corrupt ones, and returns what each artifact's status in
the store report must be. Nothing here is committed output: the files are made in a temporary
folder by the tests.
"""

from __future__ import annotations

import dataclasses
import itertools
import random
import warnings
import zlib
from collections.abc import Callable
from pathlib import Path
from typing import Any

import torch
from torch import nn


class MLP(nn.Module):
    def __init__(self, w: int) -> None:
        super().__init__()
        self.a, self.b = nn.Linear(8, w), nn.Linear(w, 4)

    def forward(self, x):
        return self.b(torch.relu(self.a(x)))


class Conv(nn.Module):
    def __init__(self, w: int) -> None:
        super().__init__()
        self.c = nn.Conv2d(3, w, 3, padding=1)
        self.fc = nn.Linear(w, 2)

    def forward(self, x):
        return self.fc(torch.relu(self.c(x)).mean(dim=(2, 3)))


class Conv1d(nn.Module):
    def __init__(self, w: int) -> None:
        super().__init__()
        self.c = nn.Conv1d(4, w, 3)

    def forward(self, x):
        return torch.tanh(self.c(x))


class Norm(nn.Module):
    def __init__(self, w: int) -> None:
        super().__init__()
        self.n, self.l = nn.LayerNorm(8), nn.Linear(8, w)

    def forward(self, x):
        return self.l(self.n(x))


class Embed(nn.Module):
    def __init__(self, w: int) -> None:
        super().__init__()
        self.e, self.l = nn.Embedding(20, w), nn.Linear(w, 3)

    def forward(self, ids):
        return self.l(self.e(ids).mean(dim=1))


class TwoOutputs(nn.Module):
    def __init__(self, w: int) -> None:
        super().__init__()
        self.l = nn.Linear(8, w)

    def forward(self, x):
        h = self.l(x)
        return torch.sigmoid(h), h.sum(dim=1)


class DictOut(nn.Module):
    def __init__(self, w: int) -> None:
        super().__init__()
        self.l = nn.Linear(8, w)

    def forward(self, x) -> dict[str, torch.Tensor]:
        h = self.l(x)
        return {"logits": h, "probs": torch.softmax(h, dim=-1)}


class TwoInputs(nn.Module):
    def __init__(self, w: int) -> None:
        super().__init__()
        self.l = nn.Linear(12, w)

    def forward(self, x, y):
        return self.l(torch.cat([x, y], dim=1))


class Residual(nn.Module):
    def __init__(self, w: int) -> None:
        super().__init__()
        self.a, self.b = nn.Linear(8, w), nn.Linear(w, 8)

    def forward(self, x):
        return x + self.b(nn.functional.gelu(self.a(x)))


class Attention(nn.Module):
    def __init__(self, w: int) -> None:
        super().__init__()
        self.q, self.k, self.v = nn.Linear(8, w), nn.Linear(8, w), nn.Linear(8, w)

    def forward(self, x):
        att = torch.softmax(self.q(x) @ self.k(x).transpose(1, 2) / 4.0, dim=-1)
        return att @ self.v(x)


class Branchy(nn.Module):
    """Data-dependent control flow: scripted, the `if` becomes torch.cond; traced, one branch is baked in."""

    def __init__(self, w: int) -> None:
        super().__init__()
        self.l = nn.Linear(8, w)

    def forward(self, x):
        if x.sum() > 0:
            return torch.relu(self.l(x))
        return -self.l(x)


class Halving(nn.Module):
    """A loop whose trip count depends on the data: no strategy can convert it (scripted only)."""

    def __init__(self, w: int) -> None:
        super().__init__()
        self.l = nn.Linear(8, w)

    def forward(self, x):
        y = self.l(x)
        while bool(y.abs().sum() > 1.0):
            y = y / 2
        return y


class Slow(nn.Module):
    """A 20,000-step scripted loop: converting it takes minutes (for timeouts and killed workers)."""

    def forward(self, x):
        for _ in range(20000):
            x = x * 1.0001 + 0.0001
        return x


def _float(*shape: int) -> Callable[[torch.dtype], tuple]:
    return lambda dt: (torch.randn(*shape, dtype=dt),)


FAMILIES: dict[str, tuple[type, Callable[[torch.dtype], tuple]]] = {
    "mlp": (MLP, _float(4, 8)),
    "conv": (Conv, _float(2, 3, 8, 8)),
    "conv1d": (Conv1d, _float(2, 4, 10)),
    "layernorm": (Norm, _float(4, 8)),
    "embedding": (Embed, lambda dt: (torch.randint(0, 20, (4, 5)),)),
    "two_outputs": (TwoOutputs, _float(4, 8)),
    "dict_out": (DictOut, _float(4, 8)),
    "two_inputs": (TwoInputs, lambda dt: (torch.randn(4, 8, dtype=dt), torch.randn(4, 4, dtype=dt))),
    "residual": (Residual, _float(4, 8)),
    "attention": (Attention, _float(2, 3, 8)),
    "branchy": (Branchy, _float(4, 8)),
    "halving": (Halving, _float(4, 8)),
}
MODES = ("trace", "script", "frozen")
DTYPES = (torch.float32, torch.float64, torch.bfloat16)
WIDTHS = (6, 16)


@dataclasses.dataclass
class Planted:
    rel: str
    status: str
    inputs: str | None  # "sidecar", "manifest" or None


def _save(family: str, mode: str, dtype: torch.dtype, width: int, path: Path) -> tuple:
    cls, make_inputs = FAMILIES[family]
    torch.manual_seed(zlib.crc32(f"{family}/{mode}/{dtype}/{width}".encode()))
    model = cls(width).to(dtype).eval()
    example = make_inputs(dtype)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        if mode == "trace":
            ts = torch.jit.trace(model, example, check_trace=False, strict=False)
        else:
            ts = torch.jit.script(model)
            if mode == "frozen":
                ts = torch.jit.freeze(ts)
        ts.save(str(path))
    return example


def _expected(family: str, mode: str) -> str:
    # a trace of Halving bakes the loop's iterations in and converts; the scripted loop cannot
    return "failed" if family == "halving" and mode != "trace" else "migrated"


def generate(root: Path, size: int = 216, no_inputs: int = 6, corrupt: int = 4, manifest_every: int = 7) -> list[Planted]:
    """`size` artifacts (families x modes x dtypes x widths: 216 combinations, spread over them
    when fewer, cycled when more), of which `no_inputs` have no inputs and `corrupt` are damaged; every
    `manifest_every`-th one has its inputs in `root/manifest.txt` rather than a sidecar. Other
    artifacts get a sidecar `NAME.inputs.pt`. Returns the expected status of each, sorted by path."""
    rng = random.Random(0)
    combos = list(itertools.product(FAMILIES, MODES, DTYPES, WIDTHS))
    planted: list[Planted] = []
    manifest_lines = ["# made by tests/artifact/storegen.py"]
    if size <= len(combos):  # spread over the families
        picked = [combos[i * len(combos) // size] for i in range(size)]
    else:
        picked = list(itertools.islice(itertools.cycle(combos), size))
    for i, (family, mode, dtype, width) in enumerate(picked):
        rel = f"{family}/{mode}/{str(dtype).removeprefix('torch.')}_w{width}_{i:03d}.pt"
        path = root / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        example = _save(family, mode, dtype, width, path)
        if i % (size // max(no_inputs, 1) or 1) == 5 and sum(p.status == "no-inputs" for p in planted) < no_inputs:
            planted.append(Planted(rel, "no-inputs", None))
            continue
        if i % manifest_every == 3:
            inputs = path.with_name(path.stem + ".batch.pth")  # neither a sidecar nor an artifact: only the manifest finds it
            torch.save(example, inputs)
            # two manifest entries are also lowered to .pte (the run itself is --no-lower)
            lowered = sum(line.endswith("--lower") for line in manifest_lines)
            lower = " --lower" if dtype == torch.float32 and family != "halving" and lowered < 2 else ""
            manifest_lines.append(f"{rel} --inputs {inputs.relative_to(root).as_posix()}{lower}")
            planted.append(Planted(rel, _expected(family, mode), "manifest"))
            continue
        torch.save(example, path.with_name(path.stem + ".inputs.pt"))
        planted.append(Planted(rel, _expected(family, mode), "sidecar"))
    victims = rng.sample([p for p in planted if p.status == "migrated" and p.inputs == "sidecar"], corrupt)
    for n, p in enumerate(victims):
        data = bytearray((root / p.rel).read_bytes())
        if n % 3 == 0:  # random bytes
            data = bytearray(rng.randbytes(len(data)))
        elif n % 3 == 1:  # a zip cut in half
            data = data[: len(data) // 2]
        else:  # bytes of a member changed, the zip's directory intact: its CRC check fails
            mid = len(data) // 3
            data[mid: mid + 16] = bytes(16)
        (root / p.rel).write_bytes(bytes(data))
        p.status = "corrupt"
    listed = {line.split()[0] for line in manifest_lines[1:]}
    # the manifest lists every artifact (those with sidecars without options), so a store run from the
    # manifest and one from the directory see the same artifacts
    for p in planted:
        if p.rel not in listed:
            manifest_lines.append(p.rel)
    (root / "manifest.txt").write_text("\n".join(manifest_lines) + "\n", encoding="utf-8")
    return sorted(planted, key=lambda p: p.rel)


def expected_totals(planted: list[Planted], manifest: bool = True) -> dict[str, int]:
    """Status counts for a run from the manifest (`manifest=True`) or from the directory, where the
    manifest's inputs files are not found (those artifacts have no inputs)."""
    out: dict[str, int] = {}
    for p in planted:
        status = p.status
        if not manifest and p.inputs == "manifest" and status != "corrupt":
            status = "no-inputs"
        out[status] = out.get(status, 0) + 1
    return out


def main(argv: Any = None) -> None:  # python tests/artifact/storegen.py DIR [SIZE]
    import sys

    args = list(argv if argv is not None else sys.argv[1:])
    planted = generate(Path(args[0]), int(args[1]) if len(args) > 1 else 216)
    print(expected_totals(planted))


if __name__ == "__main__":
    main()
