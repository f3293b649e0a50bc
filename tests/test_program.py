"""The program model (migrate/model/): artifact path patterns, links across files, what a
scripted object is, units, and the engine's guarantee that a unit is never written half-migrated."""

from __future__ import annotations

import json
import textwrap

import libcst as cst
import pytest

from ts2export.model import pathpattern as ap
from ts2export.engine import check
from ts2export.engine import Options, Task, analyze
from ts2export.model.program import Program
from ts2export.model.sites import ENTRY_SCRIPT, READER, WRITER
from ts2export.rule import Applicability, Invalid, Rule, Valid

ANY = ap.ANY


@pytest.mark.parametrize("a,b,match", [
    (("m.pt",), (ANY, "/m.pt"), True),  # a relative path may sit under any folder
    (("m.pt",), ("model.pt",), False),
    ((ANY, "/classifier.pt"), (ANY, "/head.pt"), False),
    (("a/m.pt",), ("b/m.pt",), False),
    (("/tmp/m.pt",), ("m.pt",), True),
    ((ANY,), ("anything.pt",), True),
    ((ANY, "/m_", ANY, ".pt"), (ANY, "/m_3.pt"), True),
    ((ANY, "/m_", ANY, ".pt"), (ANY, "/m_3.pt2"), False),  # (an unknown part may hold "/")
    (ap.buffer("a"), (ANY,), False),  # an in-memory buffer is only itself
    (ap.buffer("a"), ap.buffer("a"), True),
])
def test_path_patterns_may_match(a, b, match):
    assert ap.may_match(a, b) is match
    assert ap.may_match(b, a) is match


def _program(files: dict[str, str]) -> Program:
    return Program({path: textwrap.dedent(code).encode() for path, code in files.items()})


def _patterns(program: Program, kind: str) -> dict[str, list[str]]:
    return {s.text: sorted(ap.shown(p) for p in s.patterns) for s in program.sites.all if s.kind == kind}


def test_paths_are_read_across_functions_and_files():
    program = _program({
        "export.py": """
            import os
            import torch

            def export(model, out_dir):
                torch.jit.trace(model, torch.ones(2, 3)).save(os.path.join(out_dir, "m.pt"))
                torch.jit.save(torch.jit.script(model), f"{out_dir}/s.pt")
            """,
        "serve.py": """
            from pathlib import Path
            import torch

            class Service:
                def __init__(self, root, name="m.pt"):
                    self.model = torch.jit.load(str(Path(root) / name))
                    self.other = torch.jit.load(root + "/s.pt")
            """,
        "main.py": """
            import sys
            import torch
            import export
            import serve

            def main():
                out = sys.argv[1]
                export.export(torch.nn.Linear(3, 3), out)
                serve.Service(out)
                torch.save({}, "results.pt")
            """,
    })
    readers = _patterns(program, READER)
    assert readers["torch.jit.load(str(Path(root) / name))"] == ["*/m.pt"]
    assert readers['torch.jit.load(root + "/s.pt")'] == ["*/s.pt"]
    writers = {s.text for s in program.sites.all if s.kind == WRITER}
    assert not any(w.startswith("torch.save") for w in writers), "torch.save is not a TorchScript writer"
    links = {r.text: sorted(w.text for w in program.links.links[id(r)]) for r in program.sites.all if r.kind == READER}
    assert links["torch.jit.load(str(Path(root) / name))"] == [
        'torch.jit.trace(model, torch.ones(2, 3)).save(os.path.join(out_dir, "m.pt"))']
    assert links['torch.jit.load(root + "/s.pt")'] == ['torch.jit.save(torch.jit.script(model), f"{out_dir}/s.pt")']


def test_a_buffer_matches_only_itself_while_its_bytes_stay_with_torch():
    program = _program({"pack.py": """
        import io
        import torch

        def round_trip(m, x):
            buf = io.BytesIO()
            torch.jit.save(torch.jit.trace(m, x), buf)
            buf.seek(0)
            return torch.jit.load(io.BytesIO(buf.getvalue()))

        def upload(m, x, path):
            data = io.BytesIO()
            torch.jit.save(torch.jit.trace(m, x), data)
            with open(path, "wb") as fh:
                fh.write(data.getvalue())

        def download(blob):
            return torch.jit.load(io.BytesIO(blob))

        def handed_on(m, x, sink):
            out = io.BytesIO()
            torch.jit.save(torch.jit.trace(m, x), out)
            sink(out)
        """})
    writers = _patterns(program, WRITER)
    assert writers["torch.jit.save(torch.jit.trace(m, x), buf)"] == ["an in-memory buffer"]
    # its bytes go to a file, or to a function: any path may hold them
    assert writers["torch.jit.save(torch.jit.trace(m, x), data)"] == ["*"]
    assert writers["torch.jit.save(torch.jit.trace(m, x), out)"] == ["*"]
    readers = _patterns(program, READER)
    assert readers["torch.jit.load(io.BytesIO(buf.getvalue()))"] == ["an in-memory buffer"]
    assert readers["torch.jit.load(io.BytesIO(blob))"] == ["*"]  # bytes from anywhere


def test_factories_are_followed_with_their_arguments():
    program = _program({
        "models.py": """
            from torch import nn

            class Gate(nn.Module):
                pass

            class Encoder(nn.Module):
                pass

            def build(kind, dim):
                return Gate() if kind == "gate" else Encoder()
            """,
        "main.py": """
            import torch
            from models import build

            gate = torch.jit.script(build("gate", 8))
            enc = torch.jit.script(build("encoder", 8).eval())
            """,
    })
    scripts = {s.text: s for s in program.sites.all if s.kind == "script"}
    gate, unknown = program.reach.reach(scripts['torch.jit.script(build("gate", 8))'])
    assert not unknown and ("models.py", "Gate") in gate and ("models.py", "Encoder") not in gate
    enc, _ = program.reach.reach(scripts['torch.jit.script(build("encoder", 8).eval())'])
    assert ("models.py", "Encoder") in enc and ("models.py", "Gate") not in enc


def test_what_a_scripted_object_is():
    program = _program({
        "ops/__init__.py": "from .color import rgb_to_gray\n",
        "ops/color.py": "def rgb_to_gray(x):\n    return x.mean(-3, keepdim=True)\n",
        "main.py": """
            import torch
            from torch import nn
            import ops

            def check(op, x):
                return torch.jit.script(op)(x)

            def typed(model: nn.Module):
                return torch.jit.script(model)

            def run():
                f = ops.rgb_to_gray
                a = torch.jit.script(f)
                b = torch.jit.script(nn.Linear(2, 2))
                check(ops.rgb_to_gray, torch.ones(3, 2, 2))
                check(nn.ReLU(), torch.ones(3))
            """,
    })
    objects = program.views()["main.py"].objects
    assert objects["run|f"] == "function"
    assert objects["run|nn.Linear(2,2)"] == "module"
    assert objects["check|op"] == "unknown"  # a function at one call, a module at the other
    assert objects["typed|model"] == "module"  # nothing calls it: its annotation says


def test_an_annotation_stands_for_what_a_call_passes_that_cannot_be_followed():
    """A framework's recursive `compile_module(module: nn.Module)` called with a model and with
    each child of `named_children()` (not followed): the annotation says what the child is, as it
    does for a parameter nothing calls (the advice the finding gives); a followed value still
    counts, so a function passed to a module parameter leaves the kind unknown (issue 28, class 7)."""
    program = _program({
        "fw.py": """
            import torch
            from torch import nn

            def compile_module(module: nn.Module) -> nn.Module:
                for name, child in list(module.named_children()):
                    setattr(module, name, compile_module(child))
                return torch.jit.script(module)

            def compile_any(module: nn.Module):
                for child in module.children():
                    compile_any(child)
                return torch.jit.script(module)
            """,
        "main.py": """
            from torch import nn
            from fw import compile_any, compile_module

            def gelu(x):
                return x

            net = compile_module(nn.Sequential(nn.Linear(2, 2)))
            other = compile_any(gelu)
            """,
    })
    objects = program.views()["fw.py"].objects
    assert objects["compile_module|module"] == "module"
    assert objects["compile_any|module"] == "unknown"  # a function is passed at one call


def test_a_name_rebound_to_what_a_function_returns_of_it_keeps_its_kind():
    """`model = fuse(model)` where `fuse` returns its argument: the call's returns lead back to the
    value being followed, which adds nothing; the kind is the other value's (issue 32, class 2)."""
    program = _program({
        "main.py": """
            import torch
            from torch import nn

            def fuse(model):
                for m in model.modules():
                    pass
                return model

            def nothing(model):
                model.eval()

            def export(model, path):
                torch.jit.trace(model, torch.zeros(1, 3)).save(path)

            def export_none(model):
                return torch.jit.trace(model, torch.zeros(1, 3))

            def main():
                model = nn.Linear(3, 3)
                model = fuse(model)
                export(model, "x.pt")
                export_none(nothing(nn.Linear(3, 3)))
            """,
    })
    objects = program.views()["main.py"].objects
    assert objects["export|model"] == "module"
    assert objects["export_none|model"] == "unknown"  # a function that returns nothing is not a module


def test_a_reader_of_an_artifact_made_elsewhere_stays_unless_allowed(tmp_path, run_cli):
    (tmp_path / "serve.py").write_text("import torch\n\nmodel = torch.jit.load('weights/model.pt')\nprint(model)\n")
    code, out, err = run_cli("apply", "--unsafe-fixes", ".", cwd=tmp_path)
    assert "torch.jit.load" in (tmp_path / "serve.py").read_text()
    assert "reads `weights/model.pt`, which no checked file writes" in out and "--external-readers" in out
    code, out, err = run_cli("apply", "--unsafe-fixes", "--external-readers", ".", cwd=tmp_path)
    assert "torch.export.load('weights/model.pt').module()" in (tmp_path / "serve.py").read_text()


class _BrokenReaderFix(Rule):
    """Offers a fix for `torch.jit.load(...)` whose result does not compile (a stand-in for any
    fix the engine must drop)."""

    id = "TSX097"
    summary = "test rule"
    applicability = Applicability.UNSAFE
    VALID = [Valid("")]
    INVALID = [Invalid("")]

    def visit_Call(self, node: cst.Call) -> None:
        if self.matches(node.func, "torch.jit.load"):
            self.report(node, "broken fix", replacement=cst.Name("lambda"))


def test_a_unit_whose_fix_cannot_be_applied_is_not_written_half(monkeypatch):
    from ts2export.engine import registry

    rules = tuple(r for r in registry.all_rules() if r.id in ("TSX301", "TSX303")) + (_BrokenReaderFix,)
    monkeypatch.setattr(check, "select_rules", lambda select, ignore: rules)
    code = textwrap.dedent("""
        import torch

        def run(model: torch.nn.Module, x):
            traced = torch.jit.trace(model, torch.ones(2, 3))
            traced.save("m.pt")
            return torch.jit.load("m.pt")(x)
        """)
    [res] = analyze([Task("m.py", "python", data=code.encode())], Options(fix="unsafe"), jobs=1).results
    assert not res.changed, res.new.decode()
    held = {f.rule_id: f.held for f in res.findings}
    assert "its fix could not be applied" in held["TSX301"] and "its fix could not be applied" in held["TSX303"]
    assert any("would not compile" in n for n in res.notes)


def test_a_call_site_wrapped_by_freeze_migrates_only_with_it():
    code = textwrap.dedent("""
        import torch

        def run(model: torch.nn.Module, x):
            frozen = torch.jit.freeze(torch.jit.script(model))  # ts2export: inputs=(torch.ones(2, 3),)
            return frozen(x)
        """)
    task = Task("m.py", "python", data=code.encode())
    [alone] = analyze([task], Options(select=("TSX302",), fix="unsafe"), jobs=1).results
    assert not alone.changed
    assert "migrates together with `torch.jit.freeze(torch.jit.script(model))` at m.py:5, which stays TorchScript" in alone.findings[0].held
    [both] = analyze([task], Options(select=("TSX302", "TSX601"), fix="unsafe"), jobs=1).results
    assert "frozen = torch.export.export(model, (torch.ones(2, 3),)" in both.new.decode()


def _evidence(files: dict[str, str]) -> dict:
    program = _program(files)
    return {k: v for view in program.views().values() for k, v in view.inputs.items()}


def test_inputs_come_from_the_calls_of_the_loaded_artifact_in_another_file():
    evidence = _evidence({
        "publish.py": """
            import torch
            from model import Net

            def publish(path):
                torch.jit.script(Net()).save(path)
            """,
        "model.py": "import torch\n\nclass Net(torch.nn.Module):\n    pass\n",
        "serve.py": """
            import torch

            class Server:
                def __init__(self, path):
                    self.model = torch.jit.load(path)

                def __call__(self, ids):
                    return self.model(ids)

            def main():
                server = Server("net.pt")
                for length in (4, 9):
                    server(torch.randint(0, 50, (3, length)))
            """,
        "main.py": "from publish import publish\npublish('net.pt')\n",
    })
    found = evidence["publish|torch.jit.script(Net())"]  # (the writer's `.save(path)` sees the same calls)
    assert found["example"] == "(torch.zeros(3, 4, dtype=torch.int64),)"
    assert found["sizes"] == [[[3], [4, 9]]] and found["where"] == ["serve.py:9"]


def test_inputs_from_the_tests_calls_of_the_model_class():
    evidence = _evidence({
        "model.py": "import torch\n\nclass Net(torch.nn.Module):\n    pass\n",
        "export.py": "import torch\nfrom model import Net\n\nscripted = torch.jit.script(Net())\n",
        "tests/test_model.py": """
            import torch
            from model import Net

            def test_shapes():
                model = Net()
                model(torch.rand(2, 1, 16, 16).half())
                Net()(torch.rand(5, 1, 16, 8).half())
            """,
    })
    [found] = evidence.values()
    assert found["example"] == "(torch.ones(2, 1, 16, 8, dtype=torch.float16),)"
    assert found["sizes"] == [[[2, 5], [1], [16], [8, 16]]]


def test_inputs_of_a_base_class_method_that_scripts_self_come_from_its_subclasses_callers():
    # `return torch.jit.script(self)`: the value leaves the method by its `return`; the caller calls
    # the method on an instance of a subclass and names neither the base class nor its file
    evidence = _evidence({
        "base.py": """
            import torch

            class Compilable(torch.nn.Module):
                def compiled(self):
                    return torch.jit.script(self).eval()
            """,
        "nets.py": "from base import Compilable\n\nclass Net(Compilable):\n    pass\n",
        "main.py": """
            import torch
            from nets import Net

            net = Net()
            fast = net.compiled()
            fast(torch.rand(6, 3))
            fast(torch.rand(2, 3))
            """,
    })
    [found] = evidence.values()
    assert found["example"] == "(torch.ones(2, 3),)"
    assert found["sizes"] == [[[2, 6], [3]]] and found["where"] == ["main.py:7", "main.py:8"]


def test_loop_variables_over_literals_give_sizes():
    evidence = _evidence({
        "main.py": """
            import torch

            def run(model: torch.nn.Module):
                traced = torch.jit.trace(model, (torch.rand(2, 8), torch.rand(3, 8)))
                for nq, nk in ((2, 3), (5, 3), (2, 11)):
                    traced(torch.rand(nq, 8), torch.rand(nk, 8))
                batches = [torch.rand(4, 8), torch.rand(6, 8)]
                return [traced(b, b) for b in batches]
            """,
    })
    [found] = evidence.values()
    assert found["sizes"] == [[[2, 4, 5, 6], [8]], [[3, 4, 6, 11], [8]]]


def test_names_unpacked_from_a_literal_tuple_take_its_items():
    evidence = _evidence({
        "tests/test_knn.py": """
            import torch
            from knn import KNN

            def test_knn():
                m = torch.jit.script(KNN())
                q, r = torch.rand(4, 3), torch.rand(10, 3)
                m(q, r)
                a, *rest = torch.rand(1, 3), torch.rand(2, 3)  # a starred target: not item by item
            """,
        "knn.py": "import torch\n\nclass KNN(torch.nn.Module):\n    pass\n",
    })
    [found] = evidence.values()
    assert found["example"] == "(torch.ones(4, 3), torch.ones(10, 3))"


def test_getattr_of_a_module_by_names_from_a_parametrize_list_or_a_loop_gives_those_classes():
    program = _program({
        "zoo/__init__.py": "from .nets import A, B, C\n",
        "zoo/nets.py": "from torch import nn\nclass A(nn.Module): pass\nclass B(nn.Module): pass\nclass C(nn.Module): pass\n",
        "tests/test_zoo.py": """
            import pytest
            import torch
            import zoo

            NAMES = ["A", pytest.param("B", id="b")]

            @pytest.mark.parametrize("name", NAMES)
            def test_one(name):
                torch.jit.script(getattr(zoo, name)())

            class TestMany:
                @pytest.mark.parametrize("name, kwargs", [("A", {}), pytest.param("C", {}, marks=pytest.mark.slow)])
                def test_many(self, name, kwargs):
                    torch.jit.script(getattr(zoo, name)(**kwargs))

                @pytest.mark.parametrize("name", [n for n in "ABC"])
                def test_computed(self, name):
                    torch.jit.script(getattr(zoo, name)())

            def run(name):
                for n in ("B", "C"):
                    torch.jit.script(getattr(zoo, n)())
                torch.jit.script(getattr(zoo, name)())
            """,
    })
    targets: dict[str, list] = {}
    for s in program.sites.all:
        if s.kind == ENTRY_SCRIPT:
            defs, unknown = program.origins.targets(s.file, s.node.args[0])
            targets.setdefault(s.scope, []).append((sorted(q for _, q in defs), unknown))
    assert targets["test_one"] == [(["A", "B"], False)]
    assert targets["TestMany.test_many"] == [(["A", "C"], False)]
    assert targets["TestMany.test_computed"] == [([], True)]  # a comprehension is not followed
    assert sorted(targets["run"]) == [([], True), (["B", "C"], False)]  # a parameter nothing passes; a literal loop


def test_a_torchscript_class_passed_to_a_scripted_function_that_stays_keeps_its_decorator():
    code = textwrap.dedent("""
        import torch
        from torch import Tensor

        @torch.jit.script
        class Doubler:
            def __init__(self):
                pass

            def run(self, x: Tensor) -> Tensor:
                return x * 2.0

        @torch.jit.script
        def apply_runner(r: Doubler, x: Tensor) -> Tensor:
            return r.run(x) + 1.0

        def main(x):
            d = Doubler()
            return apply_runner(d, x)
        """)
    task = Task("m.py", "python", data=code.encode())
    # safe fixes: the function's decorator stays, so the class's does too
    [safe] = analyze([task], Options(fix="safe"), jobs=1).results
    assert not safe.changed, safe.new.decode()
    held = [f.held for f in safe.findings if f.held]
    assert any("it migrates together with `@torch.jit.script` on `apply_runner` at m.py:13" in h for h in held), held
    [unsafe] = analyze([task], Options(fix="unsafe"), jobs=1).results
    assert "@torch.jit.script" not in unsafe.new.decode()


def test_module_names_do_not_depend_on_the_current_folder(tmp_path, monkeypatch):
    """`check .` inside a package's folder names its modules as `check /abs/path` does: the
    package's own absolute imports (`from pkg.model import Net`) resolve to the run's files either
    way (they did not when run from inside the package: the names lost `pkg.`)."""
    from ts2export.model.pyfile import module_name

    pkg = tmp_path / "pkg"
    (pkg / "sub").mkdir(parents=True)
    for rel in ("__init__.py", "sub/__init__.py"):
        (pkg / rel).write_text("")
    (pkg / "model.py").write_text("import torch\n\n\nclass Net(torch.nn.Module):\n    def forward(self, x):\n        return x\n")
    (pkg / "sub" / "run.py").write_text("import torch\nfrom pkg.model import Net\n\nm = torch.jit.script(Net())\n")
    monkeypatch.chdir(pkg)
    assert module_name("model.py") == "pkg.model"
    assert module_name("sub/run.py") == module_name(str(pkg / "sub" / "run.py")) == "pkg.sub.run"
    inside = Program({p: (pkg / p).read_bytes() for p in ("__init__.py", "model.py", "sub/__init__.py", "sub/run.py")})
    assert inside.files.module_names["sub/run.py"] == "pkg.sub.run"
    found = inside.names.lookup_def("pkg.model.Net", "sub/run.py")
    assert found is not None and found[0].path == "model.py"


def test_a_script_in_a_package_folder_finds_its_siblings_by_file_name(tmp_path, monkeypatch):
    """`python main.py` puts main.py's folder on sys.path, so `from export import export` finds
    export.py beside it even where the folder is a package (whose files are named `pkg.export`);
    the program model finds it too, from inside the folder and by the absolute path."""
    pkg = tmp_path / "pkg"
    pkg.mkdir()
    (pkg / "__init__.py").write_text("")
    (pkg / "export.py").write_text("import torch\n\n\ndef export(m, path):\n    torch.jit.script(m).save(path)\n")
    (pkg / "main.py").write_text("from export import export\nimport export as ex\n")
    for where in (tmp_path, pkg):
        monkeypatch.chdir(where)
        prefix = "pkg/" if where == tmp_path else ""
        program = Program({prefix + p: (pkg / p).read_bytes() for p in ("__init__.py", "export.py", "main.py")})
        found = program.names.lookup_def("export.export", prefix + "main.py")
        assert found is not None and found[0].path == prefix + "export.py" and found[1].qualname == "export"
        assert program.names.in_run("export.export", prefix + "main.py")
        assert not program.names.in_run("export.export", None) and not program.names.in_run("json.dumps", prefix + "main.py")


def test_a_value_that_tests_itself_is_followed_without_recursing_forever():
    # `model = model if model is not None else Scorer()`: the condition's value is the name being
    # followed; the model asked for it again without end (RecursionError, a traceback from scan).
    program = _program({
        "scorer.py": """
            import torch
            from torch import nn

            class Scorer(nn.Module):
                def forward(self, x):
                    return x

            def compile_scorer(model=None):
                model = model if model is not None else Scorer().eval()
                return torch.jit.script(model)
            """,
    })
    views = program.views()
    assert views["scorer.py"].object_kind("compile_scorer", "model") in ("module", "unknown")


def test_a_library_that_compiles_with_torchscript_keeps_what_it_compiles(tmp_path, run_cli):
    """mace-torch's tests compile its models with e3nn's `jit.compile` (torch.jit.script inside e3nn,
    outside the run): the `is_scripting()` guards and `@torch.jit.unused` of those models must stay
    (rewriting them broke 2 of its tests in both modes)."""
    (tmp_path / "model.py").write_text(textwrap.dedent("""
        import torch
        from torch import nn

        class Block(nn.Module):
            def __init__(self):
                super().__init__()
                self.lin = nn.Linear(3, 3)

            @torch.jit.unused
            def hessian(self, x):
                def inner(y):
                    return y
                return inner(x)

            def forward(self, x):
                if not torch.jit.is_scripting():
                    x = x * 1.0
                return self.lin(x)
        """))
    (tmp_path / "test_model.py").write_text(textwrap.dedent("""
        import torch
        from e3nn.util import jit
        from model import Block

        def test_compiled():
            compiled = jit.compile(Block())
            assert compiled(torch.ones(2, 3)).shape == (2, 3)
        """))
    code, out, _err = run_cli("scan", "--unsafe-fixes", "--no-cache", "--format", "json", ".", cwd=tmp_path)
    findings = json.loads(out)["findings"]
    assert {f["rule"] for f in findings} >= {"TSX101", "TSX501"}
    for f in findings:
        if f["rule"] in ("TSX101", "TSX501"):
            assert "through `jit.compile(Block())` at test_model.py:7, which stays" in f["held_back"], f


def test_a_configured_wrapper_of_torch_jit_script_is_an_entry_point(tmp_path):
    """`script-wrappers` in [tool.ts2export] names functions of other packages that script their
    argument (a framework's `fwlib.compile_fast(model)`, whose code is not in the run): what they
    compile stays TorchScript, so the torch.cond rewrite of a branch in it waits, with the call
    named; without the setting the rewrite is written and TorchScript would fail to compile it
    (issue 28, class 7)."""
    from ts2export.engine.config import load_config

    (tmp_path / "pyproject.toml").write_text('[tool.ts2export]\nscript-wrappers = ["fwlib.compile_fast"]\n')
    model = (tmp_path / "model.py")
    model.write_text(textwrap.dedent("""
        import torch
        from torch import nn

        class Gate(nn.Module):
            def forward(self, x):
                if x.sum() > 0:
                    return x * 2
                return x - 1
        """))
    main = tmp_path / "main.py"
    main.write_text("from fwlib import compile_fast\nfrom model import Gate\n\nm = compile_fast(Gate())\n")
    cfg = load_config(tmp_path)
    assert cfg.script_wrappers == ["fwlib.compile_fast"]
    tasks = [Task(str(p), "python") for p in (main, model)]

    def branch(options):
        results = {r.path: r for r in analyze(tasks, options, jobs=1).results}
        return [f for f in [*results[str(model)].findings, *results[str(model)].fixed] if f.rule_id == "TSX401"]

    [held] = branch(Options(fix="unsafe", script_wrappers=tuple(cfg.script_wrappers)))
    assert held.held and "compile_fast(Gate())" in held.held and "TorchScript" in held.held
    [fixed] = branch(Options(fix="unsafe"))
    assert not fixed.held  # nothing tells the model that compile_fast scripts: the rewrite is written


def test_a_script_wrapper_is_named_by_its_dotted_path(tmp_path):
    from ts2export.engine.config import ConfigError, load_config

    (tmp_path / "pyproject.toml").write_text('[tool.ts2export]\nscript-wrappers = ["compile_fast"]\n')
    with pytest.raises(ConfigError, match="dotted path"):
        load_config(tmp_path)


_COMPAT = {
    "pkg/__init__.py": "",
    # torch is optional: the package imports without it (thinc's, spaCy's and many others' idiom)
    "pkg/compat.py": """
        try:
            import torch
            import torch.nn
        except ImportError:
            torch = None
        """,
    "pkg/model.py": """
        from .compat import torch


        class Scale(torch.nn.Module):
            def __init__(self):
                super().__init__()
                self.w = torch.nn.Parameter(torch.ones(4) * 2)

            def forward(self, x):
                return x * self.w


        def build(path):
            model = torch.jit.script(Scale().eval())
            torch.jit.save(model, path)
            return path
        """,
    "main.py": """
        import sys

        from pkg.compat import torch
        from pkg.model import build

        loaded = torch.jit.load(build(sys.argv[1] + ".model"))
        torch.manual_seed(0)
        torch.save(loaded(torch.randn(2, 4)), sys.argv[1])
        """,
}


def test_a_library_imported_through_a_module_of_the_run_is_that_library(tmp_path):
    """`from ..compat import torch` where compat.py does `import torch` (or `torch = None` without
    it): `torch.jit.script` there is TorchScript, found and migrated (it was not seen: 0 findings
    in thinc). The fix adds no `import torch` nor `from torch.export import Dim` to such a file,
    which would make the package need torch to import; the program computes the same."""
    import subprocess
    import sys

    files = {rel: textwrap.dedent(text).lstrip().encode() for rel, text in _COMPAT.items()}
    program = Program(files)
    assert program.names.library_name("pkg.compat.torch.jit.script") == "torch.jit.script"
    assert program.names.library_name("pkg.model.Scale") == "pkg.model.Scale"  # the run's own: as it was
    assert {(s.file.path, s.kind) for s in program.sites.all} >= {("pkg/model.py", ENTRY_SCRIPT), ("main.py", READER)}
    assert program.views()["pkg/model.py"].reexports == {".compat.torch": "torch"}

    tasks = [Task(rel, "python", data=data) for rel, data in files.items()]
    results = {r.path: r for r in analyze(tasks, Options(fix="unsafe"), jobs=1).results}
    assert {f.rule_id for f in results["pkg/model.py"].fixed} == {"TSX302", "TSX303"}
    model = results["pkg/model.py"].new.decode()
    assert "torch.export.export(Scale().eval()" in model and "torch.export.Dim.AUTO" in model
    assert [line for line in model.splitlines() if "import" in line] == ["from .compat import torch"]
    assert "torch.export.load(" in results["main.py"].new.decode()

    def run(tree: dict[str, bytes], name: str):
        import torch

        folder = tmp_path / name
        for rel, data in tree.items():
            (folder / rel).parent.mkdir(parents=True, exist_ok=True)
            (folder / rel).write_bytes(data)
        subprocess.run([sys.executable, "main.py", str(folder / "out.pt")], cwd=folder, check=True, capture_output=True)
        return torch.load(folder / "out.pt")

    import torch

    migrated = {rel: results[rel].new if results[rel].changed else data for rel, data in files.items()}
    torch.testing.assert_close(run(migrated, "after"), run(files, "before"))


def test_a_save_method_with_keywords_no_script_module_takes_is_not_a_writer():
    """`self._model.save(f, save_format="h5")` (Keras, in thinc's TensorFlow shim) would raise
    TypeError on a ScriptModule: it is no TorchScript writer, and does not join the unit of the
    file's `torch.jit.save`/`torch.jit.load` (whose unknown paths it matched)."""
    program = _program({
        "shims.py": """
            import torch

            class TorchShim:
                def to_bytes(self, filelike):
                    torch.jit.save(self._model, filelike)
                    self._model.save(filelike, _extra_files={"meta": "1"})

                def from_bytes(self, filelike):
                    self._model = torch.jit.load(filelike)

            class KerasShim:
                def to_bytes(self, f):
                    self._model.save(f, save_format="h5")
            """,
    })
    writers = sorted(s.text for s in program.sites.all if s.kind == WRITER)
    assert writers == ['self._model.save(filelike, _extra_files={"meta": "1"})', "torch.jit.save(self._model, filelike)"]

