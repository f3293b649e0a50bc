"""Recording overhead: a program that calls a scripted module many times, run plain and under
`ts2export record`, alternately, in this same run. Prints figures and ratios; asserts nothing.

    python scripts/bench_record.py [--calls 20000] [--rounds 3]

Figures: the wall and CPU time of the whole command (start-up, torch import and the merge included;
target: recorded / plain < 1.10 wall), the CPU time of the program's calling loop alone, and the
per-call cost of the hooks measured call by call inside one recorded process (the recorded model
against a copy scripted past the public `torch.jit.script`, so never recorded, interleaved). On a
busy machine the interleaved figure is the steady one.
"""

from __future__ import annotations

import argparse
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

PROGRAM = '''
import sys
import time
import torch

torch.set_num_threads(1)


class Scorer(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.emb = torch.nn.Embedding(1000, 32)
        self.fc = torch.nn.Linear(32, 8)

    def forward(self, ids, mask):
        return (self.fc(self.emb(ids)) * mask.unsqueeze(-1)).sum(1)


model = torch.jit.script(Scorer().eval())
# the same model scripted past the public name: never recorded, even under `ts2export record`
unrecorded = torch.jit._script.script(Scorer().eval())
unrecorded.load_state_dict(model.state_dict())
calls = int(sys.argv[1])
inputs = [(torch.randint(0, 1000, (b, s)), torch.ones(b, s)) for b in (1, 4, 8) for s in (16, 32)]
with torch.no_grad():
    for ids, mask in inputs * 3:  # warm up the TorchScript executor
        model(ids, mask)
        unrecorded(ids, mask)
    start = time.process_time()
    for i in range(calls):
        ids, mask = inputs[i % len(inputs)]
        model(ids, mask)
    loop = time.process_time() - start
    # interleaved, call by call: steady under load, where separate runs are not
    a, b = [], []
    clock = time.perf_counter_ns
    for i in range(calls):
        ids, mask = inputs[i % len(inputs)]
        t0 = clock()
        model(ids, mask)
        t1 = clock()
        unrecorded(ids, mask)
        t2 = clock()
        a.append(t1 - t0)
        b.append(t2 - t1)
a.sort()
b.sort()
print(f"LOOP {loop:.6f}")
print(f"PAIR {a[len(a) // 2]} {b[len(b) // 2]}")
'''


def _children_cpu() -> float:
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def run(cmd: list[str], cwd: Path) -> tuple[float, float, float, int, int]:
    """(wall seconds, CPU seconds of the whole process tree, CPU seconds of the calling loop,
    median ns per call of the model, of the unrecorded copy, interleaved)."""
    cpu0 = _children_cpu()
    start = time.perf_counter()
    proc = subprocess.run(cmd, cwd=cwd, capture_output=True, text=True)
    wall = time.perf_counter() - start
    cpu = _children_cpu() - cpu0
    if proc.returncode != 0:
        raise SystemExit(f"benchmark program failed ({proc.returncode}):\n{proc.stderr}")
    loop = next(float(line.split()[1]) for line in proc.stdout.splitlines() if line.startswith("LOOP "))
    pair = next(line.split()[1:] for line in proc.stdout.splitlines() if line.startswith("PAIR "))
    return wall, cpu, loop, int(pair[0]), int(pair[1])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--calls", type=int, default=20000)
    parser.add_argument("--rounds", type=int, default=3)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="ts2export-bench-record-") as tmp:
        work = Path(tmp)
        (work / "prog.py").write_text(PROGRAM, encoding="utf-8")
        plain_cmd = [sys.executable, "prog.py", str(args.calls)]
        rec_cmd = [sys.executable, "-m", "ts2export", "record", "-q", "-o", "rec.json", "--", *plain_cmd]
        plain, recorded = [], []
        for _ in range(args.rounds):
            plain.append(run(plain_cmd, work))
            recorded.append(run(rec_cmd, work))
        import json

        rec = json.loads((work / "rec.json").read_text())
        calls = sum(m["calls"] for s in rec["sites"] for m in s["methods"].values())
    def med(runs, i):
        return statistics.median(r[i] for r in runs)

    def best(runs, i):
        return min(r[i] for r in runs)

    pw, pc, pl = med(plain, 0), med(plain, 1), med(plain, 2)
    rw, rc, rl = med(recorded, 0), med(recorded, 1), med(recorded, 2)
    per_call = (rl - pl) / args.calls * 1e6
    print(f"program: {args.calls} calls of a scripted embedding+linear module, 6 input shapes; {args.rounds} rounds, medians")
    print(f"recorded calls in the last recording: {calls} (plain loop: {pl / args.calls * 1e6:.1f} us CPU per call)")
    print(f"whole command, wall   plain {pw:7.2f} s   recorded {rw:7.2f} s   ratio {rw / pw:.3f}   (target < 1.10)")
    print(f"whole command, CPU    plain {pc:7.2f} s   recorded {rc:7.2f} s   ratio {rc / pc:.3f}")
    print(f"calling loop, CPU     plain {pl:7.3f} s   recorded {rl:7.3f} s   ratio {rl / pl:.3f}   ({per_call:+.2f} us per call)")
    bw, bl = best(recorded, 0) / best(plain, 0), best(recorded, 2) / best(plain, 2)
    print(f"best of {args.rounds} rounds: whole command wall ratio {bw:.3f}, calling loop CPU ratio {bl:.3f}")
    pa, pb = med(plain, 3), med(plain, 4)
    ra, rb = med(recorded, 3), med(recorded, 4)
    print(f"interleaved, one process, median per call: plain run {pa / 1e3:.1f} vs {pb / 1e3:.1f} us (A/A); "
          f"recorded run: recorded model {ra / 1e3:.1f} us vs unrecorded copy {rb / 1e3:.1f} us "
          f"(ratio {ra / rb:.3f}, {(ra - rb) / 1e3:+.2f} us per call)")


if __name__ == "__main__":
    main()
