"""The proof in `ts2export record`: at exit each scripted or traced object is exported with the
recorded inputs, compared with TorchScript on the recorded samples and round-tripped; `apply
--recording` migrates what was proven and holds back what failed, naming the error and the line.

Each program runs for real in a child process, so these tests are slow.
"""

from __future__ import annotations

import subprocess
import sys
import textwrap
from pathlib import Path

import pytest
import torch

from ts2export.record.recording import load_recording

pytestmark = pytest.mark.slow


def write(folder: Path, name: str, text: str) -> Path:
    path = folder / name
    path.write_text(textwrap.dedent(text).lstrip(), encoding="utf-8")
    return path


def ts2export(folder: Path, *args: str, env: dict | None = None) -> subprocess.CompletedProcess:
    import os

    return subprocess.run([sys.executable, "-m", "ts2export", *args], cwd=folder, capture_output=True, text=True,
                          timeout=600, env={**os.environ, **(env or {})})


def proof(rec, kind: str = "script") -> dict:
    (site,) = [s for s in rec.sites if s["kind"] == kind]
    return site.get("proof")


def run_output(folder: Path) -> list:
    subprocess.run([sys.executable, "main.py", "out.pt"], cwd=folder, check=True, timeout=300)
    return torch.load(folder / "out.pt")


MAIN = '''
import sys
import torch
from model import build

model = torch.jit.script(build())
outs = []
torch.manual_seed(1)
for n in (3, 5, 8):
    outs.append(model(torch.randn(n, 4)))
torch.save(outs, sys.argv[1])
'''


def test_a_faithful_module_is_proven_and_migrates_with_the_recorded_inputs(tmp_path):
    write(tmp_path, "model.py", '''
        import torch

        class Scaler(torch.nn.Module):
            def __init__(self):
                super().__init__()
                self.lin = torch.nn.Linear(4, 2)

            def forward(self, x):
                return self.lin(x).relu()

        def build():
            torch.manual_seed(0)
            return Scaler().eval()
    ''')
    write(tmp_path, "main.py", MAIN)
    before = run_output(tmp_path)
    done = ts2export(tmp_path, "record", "-o", "rec.json", "--", sys.executable, "main.py", "out.pt")
    assert done.returncode == 0, done.stderr
    assert "1 proven" in done.stderr
    verdict = proof(load_recording(tmp_path / "rec.json"))
    assert verdict["verdict"] == "proven" and verdict["methods"] == ["forward"]
    assert verdict["samples"] == 3  # the three recorded calls, besides the example
    applied = ts2export(tmp_path, "apply", "--unsafe-fixes", "--recording", "rec.json", ".")
    assert applied.returncode == 0, applied.stdout + applied.stderr
    main = (tmp_path / "main.py").read_text()
    assert "torch.export.export(" in main and "torch.jit.script" not in main
    after = run_output(tmp_path)
    assert all(torch.allclose(a, b) for a, b in zip(before, after))


GATE = '''
    import torch

    class Gate(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.lin = torch.nn.Linear(4, 4)

        def forward(self, x):
            y = self.lin(x)
            keep = int(y.argmax()) % 4 + 1
            return y[:, :keep]

    def build():
        torch.manual_seed(0)
        return Gate().eval()
'''
# (A data-dependent `if` would not do: its failure lies in code `apply --unsafe-fixes` rewrites to
# torch.cond, and such a failure holds nothing back; tests/test_never_broken.py's recorded cases.)


def test_an_export_that_fails_is_held_back_with_its_error_and_the_line_in_the_model(tmp_path):
    write(tmp_path, "model.py", GATE)
    write(tmp_path, "main.py", MAIN)
    before = run_output(tmp_path)
    done = ts2export(tmp_path, "record", "-o", "rec.json", "--", sys.executable, "main.py", "out.pt")
    assert done.returncode == 0 and "1 failed" in done.stderr, done.stderr
    verdict = proof(load_recording(tmp_path / "rec.json"))
    assert verdict["verdict"] == "failed" and verdict["step"] == "export"
    file, line, function = verdict["frame"]
    assert file.endswith("model.py") and function == "forward"
    assert "keep" in (tmp_path / "model.py").read_text().splitlines()[line - 1]
    applied = ts2export(tmp_path, "apply", "--unsafe-fixes", "--recording", "rec.json", ".")
    out = applied.stdout + applied.stderr
    assert "failed its proof in the recording" in out and "model.py:" in out
    assert "torch.jit.script(build())" in (tmp_path / "main.py").read_text()
    after = run_output(tmp_path)
    assert all(torch.equal(a, b) for a, b in zip(before, after))


def test_a_module_whose_recorded_export_failed_runs_eager_where_it_is_only_called(tmp_path):
    write(tmp_path, "model.py", GATE.replace("        def forward", "        @torch.jit.ignore\n        def describe(self) -> str:\n"
                                             "            return 'gate'\n\n        def forward"))
    write(tmp_path, "main.py", """
        import sys
        import torch
        from model import build

        def main(out):
            model = torch.jit.script(build())
            torch.manual_seed(1)
            torch.save([model(torch.randn(n, 4)) for n in (3, 5, 8)], out)

        main(sys.argv[1])
    """)
    before = run_output(tmp_path)
    done = ts2export(tmp_path, "record", "-o", "rec.json", "--", sys.executable, "main.py", "out.pt")
    assert done.returncode == 0 and "1 failed" in done.stderr, done.stderr
    applied = ts2export(tmp_path, "apply", "--unsafe-fixes", "--recording", "rec.json", ".")
    main = (tmp_path / "main.py").read_text()
    # the export failed when it ran: the module, only called here, runs eager instead, and the
    # decorator TorchScript needed goes with the script call
    assert "    model = build()\n" in main and "# ts2export: `torch.jit.script(build())` only sped up" in main, main
    assert "@torch.jit.ignore" not in (tmp_path / "model.py").read_text(), applied.stdout
    after = run_output(tmp_path)
    assert all(torch.equal(a, b) for a, b in zip(before, after))


def test_outputs_that_differ_from_torchscript_fail_the_proof(tmp_path):
    # TorchScript copied the attribute when it scripted the module; the program changed the eager
    # module's afterwards, which the export takes.
    write(tmp_path, "model.py", '''
        import torch

        class Scaled(torch.nn.Module):
            def __init__(self):
                super().__init__()
                self.scale = 2.0

            def forward(self, x):
                return x * self.scale

        def build():
            return Scaled()
    ''')
    write(tmp_path, "main.py", MAIN.replace("model = torch.jit.script(build())",
                                            "eager = build()\nmodel = torch.jit.script(eager)\neager.scale = 3.0"))
    done = ts2export(tmp_path, "record", "-o", "rec.json", "--", sys.executable, "main.py", "out.pt")
    verdict = proof(load_recording(tmp_path / "rec.json"))
    assert verdict["verdict"] == "failed" and verdict["step"] == "compare", done.stderr
    assert "outputs differ" in verdict["error"]


def test_a_branch_for_torchscript_is_proven_as_the_migrated_code_takes_it(tmp_path):
    # TSX501 writes torch.compiler.is_exporting() for torch.jit.is_scripting(): the exported
    # program takes the branch TorchScript took, and the proof exports it so.
    write(tmp_path, "model.py", '''
        import torch

        class Twice(torch.nn.Module):
            def forward(self, x):
                if torch.jit.is_scripting():
                    return x * 2
                return x * 3

        def build():
            return Twice()
    ''')
    write(tmp_path, "main.py", MAIN)
    done = ts2export(tmp_path, "record", "-o", "rec.json", "--", sys.executable, "main.py", "out.pt")
    verdict = proof(load_recording(tmp_path / "rec.json"))
    assert verdict["verdict"] == "proven", done.stderr
    assert verdict["as_apply_writes"] == ["`torch.jit.is_scripting()` answered as `torch.compiler.is_exporting()`"]


def test_calls_with_other_input_structures_fail_the_proof(tmp_path):
    # one exported program takes one structure: here lists of two and of three tensors
    write(tmp_path, "model.py", '''
        from typing import List

        import torch

        class Summed(torch.nn.Module):
            def forward(self, xs: List[torch.Tensor]):
                out = xs[0]
                for x in xs[1:]:
                    out = out + x
                return out

        def build():
            return Summed()
    ''')
    write(tmp_path, "main.py", '''
        import sys
        import torch
        from model import build

        model = torch.jit.script(build())
        outs = [model([torch.ones(2), torch.ones(2)]), model([torch.ones(2)] * 3), model([torch.ones(2)] * 3)]
        torch.save(outs, sys.argv[1])
    ''')
    done = ts2export(tmp_path, "record", "-o", "rec.json", "--", sys.executable, "main.py", "out.pt")
    verdict = proof(load_recording(tmp_path / "rec.json"))
    assert verdict["verdict"] == "failed" and verdict["step"] == "inputs", done.stderr
    assert "1 other input structure(s) or dtype(s) (1 call(s))" in verdict["error"]


def test_the_program_s_output_and_exit_code_are_unchanged_and_no_prove_skips_it(tmp_path):
    write(tmp_path, "main.py", '''
        import sys
        import torch

        class Twice(torch.nn.Module):
            def forward(self, x):
                return x * 2

        m = torch.jit.script(Twice())
        print("result", m(torch.ones(2)).tolist())
        sys.exit(3)
    ''')
    done = ts2export(tmp_path, "record", "-q", "-o", "rec.json", "--", sys.executable, "main.py")
    assert done.returncode == 3
    # as the program alone writes them (torch 2.14 adds its own FutureWarning to stderr)
    alone = subprocess.run([sys.executable, "main.py"], cwd=tmp_path, capture_output=True, text=True)
    assert done.stdout == alone.stdout == "result [2.0, 2.0]\n" and done.stderr == alone.stderr
    assert proof(load_recording(tmp_path / "rec.json"))["verdict"] == "proven"
    done = ts2export(tmp_path, "record", "-q", "--no-prove", "-o", "rec2.json", "--", sys.executable, "main.py")
    assert done.returncode == 3 and proof(load_recording(tmp_path / "rec2.json")) is None


def test_a_proof_past_its_time_bound_is_skipped_not_failed(tmp_path):
    write(tmp_path, "main.py", '''
        import torch

        m = torch.jit.script(torch.nn.Sequential(*[torch.nn.Linear(8, 8) for _ in range(30)]))
        m(torch.ones(2, 8))
    ''')
    done = ts2export(tmp_path, "record", "-q", "--prove-timeout", "0.01", "-o", "rec.json", "--", sys.executable, "main.py")
    assert done.returncode == 0, done.stderr
    verdict = proof(load_recording(tmp_path / "rec.json"))
    assert verdict["verdict"] == "skipped" and "longer than" in verdict["error"]


def test_a_range_export_refuses_is_proven_with_the_dims_it_takes_and_apply_writes_them(tmp_path):
    # torch.export trips on the recorded range of the length dim of an EmbeddingBag input (an
    # internal assertion in its constraint solver); Dim.DYNAMIC exports, and the comparison on the
    # recorded lengths proves it.
    write(tmp_path, "model.py", '''
        import torch

        class Bag(torch.nn.Module):
            def __init__(self):
                super().__init__()
                self.embed = torch.nn.EmbeddingBag(50, 8, mode="mean")

            def forward(self, tokens):
                return self.embed(tokens)

        def build():
            torch.manual_seed(0)
            return Bag().eval()
    ''')
    write(tmp_path, "main.py", '''
        import sys
        import torch
        from model import build

        model = torch.jit.script(build())
        torch.manual_seed(1)
        outs = [model(torch.randint(0, 50, (3, n))) for n in (4, 9)]
        torch.save(outs, sys.argv[1])
    ''')
    before = run_output(tmp_path)
    ts2export(tmp_path, "record", "-q", "-o", "rec.json", "--", sys.executable, "main.py", "out.pt")
    verdict = proof(load_recording(tmp_path / "rec.json"))
    assert verdict["verdict"] == "proven", verdict
    assert verdict["ranges"] == {"forward": {"tokens_dim1": "dynamic"}}
    ts2export(tmp_path, "apply", "--unsafe-fixes", "--recording", "rec.json", ".")
    assert "torch.export.Dim.DYNAMIC" in (tmp_path / "main.py").read_text()
    after = run_output(tmp_path)
    assert all(torch.allclose(a, b) for a, b in zip(before, after))


FUSED = Path(__file__).resolve().parent.parent / "corpus" / "never_broken" / "fused_detector" / "before"


@pytest.mark.slow
def test_parameters_written_in_place_are_proven_as_the_fix_leaves_them_and_held_where_nothing_fixes_them(tmp_path):
    """Issue 32, class 2: the fusing helper's copy_ under grad mode made the fused weights non-leaf,
    which ExportedProgram.module() refuses. The proof exports them made leaves and names them; apply
    keeps the unit where TSX310 copies detached values, and holds it (with the sentence) where not."""
    import shutil

    shutil.copytree(FUSED, tmp_path / "prog")
    prog = tmp_path / "prog"
    before = torch.load(_run(prog, "before.pt"))
    done = ts2export(prog, "record", "-o", "rec.json", "--", sys.executable, "main.py", "rec-out.pt")
    assert done.returncode == 0 and "1 proven" in done.stderr, done.stderr
    verdict = proof(load_recording(prog / "rec.json"), "trace")
    assert verdict["verdict"] == "proven"
    assert verdict["non_leaf"] == ["stem.conv.weight", "stem.conv.bias", "body.conv.weight", "body.conv.bias"]
    shutil.copytree(prog, tmp_path / "unfixed")
    held = ts2export(tmp_path / "unfixed", "apply", "--unsafe-fixes", "--recording", "rec.json", "--ignore", "TSX310", ".")
    assert "exports parameters (`stem.conv.weight`" in held.stdout and "docs/holds.md#non-leaf-parameters" in held.stdout
    assert (tmp_path / "unfixed" / "detector.py").read_text() == (FUSED / "detector.py").read_text()
    applied = ts2export(prog, "apply", "--unsafe-fixes", "--recording", "rec.json", ".")
    assert applied.returncode == 0, applied.stdout + applied.stderr
    code = (prog / "detector.py").read_text()
    assert ".detach())" in code and "torch.export.export(model" in code and "torch.jit" not in code
    after = torch.load(_run(prog, "after.pt"))
    assert after["names"] == before["names"]
    assert all(torch.allclose(after[k], before[k], atol=1e-5) for k in ("unfused", "served", "big", "one"))


def _run(folder: Path, out: str) -> Path:
    done = subprocess.run([sys.executable, "main.py", out], cwd=folder, capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr[-2000:]
    return folder / out


def test_a_model_that_takes_gradients_in_forward_is_run_with_autograd(tmp_path):
    """Forces as the negative gradient of an energy, inside forward: the proof ran the TorchScript
    object under no_grad, where `torch.autograd.grad` fails, and skipped the site ("the TorchScript
    object failed on the recorded inputs"); it now runs such a model with autograd (issue 28,
    class 6)."""
    write(tmp_path, "model.py", '''
        import torch

        class Forces(torch.nn.Module):
            def __init__(self):
                super().__init__()
                self.lin = torch.nn.Linear(4, 1)

            def forward(self, x):
                x = x.requires_grad_(True)
                energy = self.lin(x).sum()
                grads = torch.autograd.grad([energy], [x])
                force = grads[0]
                assert force is not None
                return -force

        def build():
            torch.manual_seed(0)
            return Forces()
    ''')
    write(tmp_path, "main.py", MAIN)
    done = ts2export(tmp_path, "record", "-o", "rec.json", "--", sys.executable, "main.py", "out.pt")
    assert done.returncode == 0, done.stderr
    verdict = proof(load_recording(tmp_path / "rec.json"))
    assert "failed on the recorded inputs" not in verdict.get("error", ""), verdict
    assert verdict["verdict"] in ("proven", "failed"), verdict
