"""Generated programs: a kept TorchScript call (a script or trace the program reads TorchScript-only
facts of, so it stays) reaches a construct of its own through each path real code takes, and
`apply --unsafe-fixes` with every rule must leave the kept call compiling, with the same outputs.

Constructs: an `is_scripting()` guard, an `is_tracing()` helper, `@torch.jit._overload` stubs, a
TorchScript class named in an annotation, `@torch.jit.ignore` / `@torch.jit.unused` methods whose
bodies TorchScript cannot compile, an `@torch.jit.export` method the program calls on the scripted
object, and a `@torch.jit.script` function a trace calls. Paths: the same file, an import from
another module, a module attribute (`ops.use(x)`), a package's re-export, a submodule held in an
attribute, and a base class in another file. (Issue 49, class B: the program model answers "does a
kept TorchScript call compile this?" across files and packages.)
"""

from __future__ import annotations

import textwrap

import pytest

from ts2export.engine.tasks import Options
from ts2export.harness.corpus import compare_outputs, run_program, run_tree

pytestmark = pytest.mark.slow

# -- constructs used from forward as a function: (module-level code defining `use`, the imports it needs)
FUNCTIONS = {
    "guard": """
        def use(x: torch.Tensor) -> torch.Tensor:
            if torch.jit.is_scripting():
                return x * 2.0
            return x + x
        """,
    "tracing_helper": """
        def is_jit_tracing() -> bool:
            if torch.jit.is_scripting():
                return False
            return torch.jit.is_tracing()


        def use(x: torch.Tensor) -> torch.Tensor:
            if not is_jit_tracing():
                x = x * 1.0
            return x + 1.0
        """,
    "overloads": """
        @torch.jit._overload
        def widen(x: torch.Tensor, n: int) -> torch.Tensor:
            ...


        @torch.jit._overload
        def widen(x: torch.Tensor, n: float) -> torch.Tensor:
            ...


        def widen(x, n):
            return x * n


        def use(x: torch.Tensor) -> torch.Tensor:
            return widen(x, 2) + widen(x, 0.5)
        """,
    "script_class": """
        @torch.jit.script
        class Span:
            def __init__(self, lo: torch.Tensor, hi: torch.Tensor):
                self.lo = lo
                self.hi = hi

            def width(self) -> torch.Tensor:
                return self.hi - self.lo


        def measure(s: Span) -> torch.Tensor:
            return s.width()


        def use(x: torch.Tensor) -> torch.Tensor:
            return measure(Span(x, x * 3.0))
        """,
}

# -- constructs that are methods: (method code, the forward body that uses them)
METHODS = {
    "ignore": ("""
        @torch.jit.ignore
        def note(self, x: torch.Tensor) -> float:
            return float(sum(v for v in x.flatten().tolist()))
        """, "self.note(x)\n        return x * 2.0"),
    "unused": ("""
        @torch.jit.unused
        def debug_view(self, x: torch.Tensor) -> torch.Tensor:
            return torch.tensor([v for v in x.flatten().tolist() if v > 0])
        """, "if self.training:\n            return self.debug_view(x)\n        return x - 1.0"),
    "export": ("""
        @torch.jit.export
        def embed(self, x: torch.Tensor) -> torch.Tensor:
            return x.mean(-1)
        """, "return x * 3.0"),
}

MAIN_SCRIPT = """
    import sys

    import torch

    from lib.model import Model


    def main(out):
        model = Model().eval()
        scripted = torch.jit.script(model)
        compiled = len(str(scripted.graph)) > 0  # TorchScript-only: the call stays
        x = torch.arange(12, dtype=torch.float32).reshape(3, 4)
        results = [compiled, scripted(x), scripted(-x - 1.0), model(x)]
        if hasattr(model, "embed"):
            results.append(scripted.embed(x))
        torch.save(results, out)


    if __name__ == "__main__":
        main(sys.argv[1])
    """

MAIN_TRACE = MAIN_SCRIPT.replace("scripted = torch.jit.script(model)",
                                 "scripted = torch.jit.trace(model, torch.ones(3, 4))")

SCRIPTED_FUNCTION = """
    @torch.jit.script
    def use(x: torch.Tensor) -> torch.Tensor:
        if bool(x.sum() > 0):
            return x * 2.0
        return x
    """


def _d(code: str) -> str:
    return textwrap.dedent(code).strip("\n") + "\n"


def _function_program(construct: str, path: str, main: str = MAIN_SCRIPT) -> dict[str, str]:
    defs = _d(FUNCTIONS[construct] if construct in FUNCTIONS else SCRIPTED_FUNCTION)
    files = {"lib/__init__.py": "", "main.py": _d(main)}
    header = "import torch\nfrom torch import nn\n"
    forward = "return use(x) + 1.0"
    imports = ""
    model_defs = ""
    if path == "same_file":
        model_defs = "\n\n" + defs
    elif path == "import":
        files["lib/ops.py"] = "import torch\n\n\n" + defs
        imports = "from lib.ops import use\n"
    elif path == "module_attribute":
        files["lib/ops.py"] = "import torch\n\n\n" + defs
        imports = "from lib import ops\n"
        forward = "return ops.use(x) + 1.0"
    elif path == "reexport":
        files["lib/ops.py"] = "import torch\n\n\n" + defs
        files["lib/__init__.py"] = "from .ops import use\n\n__all__ = [\"use\"]\n"
        imports = "from lib import use\n"
    elif path == "submodule":
        files["lib/ops.py"] = "import torch\n\n\n" + defs
        files["lib/blocks.py"] = _d("""
            import torch
            from torch import nn

            from lib.ops import use


            class Block(nn.Module):
                def forward(self, x: torch.Tensor) -> torch.Tensor:
                    return use(x)
            """)
        imports = "from lib.blocks import Block\n"
        forward = "return self.block(x) + 1.0"
    files["lib/model.py"] = header + imports + model_defs + _d(f"""


        class Model(nn.Module):
            def __init__(self):
                super().__init__()
                self.block = {"Block()" if path == "submodule" else "nn.Identity()"}

            def forward(self, x: torch.Tensor) -> torch.Tensor:
                {forward}
        """)
    return files


def _method_program(construct: str, path: str) -> dict[str, str]:
    method, body = METHODS[construct]
    method = textwrap.indent(_d(method), "    ")
    files = {"lib/__init__.py": "", "main.py": _d(MAIN_SCRIPT)}
    forward = f"    def forward(self, x: torch.Tensor) -> torch.Tensor:\n        {body}\n"
    if path == "same_file":
        files["lib/model.py"] = ("import torch\nfrom torch import nn\n\n\nclass Model(nn.Module):\n" + method + "\n"
                                 + forward)
    elif path == "base_class":
        files["lib/base.py"] = "import torch\nfrom torch import nn\n\n\nclass Base(nn.Module):\n" + method
        files["lib/model.py"] = ("import torch\n\nfrom lib.base import Base\n\n\nclass Model(Base):\n" + forward)
    elif path == "submodule":
        inner = forward.replace("def forward", "def forward", 1)
        files["lib/blocks.py"] = ("import torch\nfrom torch import nn\n\n\nclass Block(nn.Module):\n" + method + "\n"
                                  + inner)
        files["lib/model.py"] = _d("""
            import torch
            from torch import nn

            from lib.blocks import Block


            class Model(nn.Module):
                def __init__(self):
                    super().__init__()
                    self.block = Block()

                def forward(self, x: torch.Tensor) -> torch.Tensor:
                    return self.block(x) + 1.0
            """)
        if construct == "export":  # the program calls `embed` on the scripted model: the model offers it
            files["lib/model.py"] += textwrap.indent(_d("""
                @torch.jit.export
                def embed(self, x: torch.Tensor) -> torch.Tensor:
                    return self.block.embed(x)
                """), "    ")
    return files


CASES = (
    [(f"{c}-{p}", "function", c, p) for c in FUNCTIONS for p in ("same_file", "import", "module_attribute", "reexport", "submodule")]
    + [(f"{c}-{p}", "method", c, p) for c in METHODS for p in ("same_file", "base_class", "submodule")]
    + [(f"trace-{c}-{p}", "trace", c, p) for c in ("tracing_helper", "scripted_function") for p in ("same_file", "import", "submodule")]
)


class _Case:
    timeout = 120
    rtol = atol = None


def _files(kind: str, construct: str, path: str) -> dict[str, str]:
    if kind == "method":
        return _method_program(construct, path)
    return _function_program(construct, path, MAIN_TRACE if kind == "trace" else MAIN_SCRIPT)


@pytest.mark.parametrize("name,kind,construct,path", CASES, ids=[c[0] for c in CASES])
def test_a_kept_torchscript_call_still_compiles_what_it_reaches(name, kind, construct, path, tmp_path):
    files = {rel: text.encode() for rel, text in _files(kind, construct, path).items()}
    for rel, data in files.items():
        (tmp_path / rel).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / rel).write_bytes(data)
    expected, _ = run_program(tmp_path, "main.py", _Case.timeout)
    assert expected[0] is True
    results = run_tree(files, Options(fix="unsafe", plan="unsafe", rule_options={"root": str(tmp_path)}))
    migrated = dict(files)
    for r in results:
        assert r.error is None, f"{r.path}: {r.error}"
        if r.changed:
            migrated[r.path] = r.new
    found = {f.rule_id for r in results if r.path != "main.py" for f in [*r.findings, *r.fixed]}
    assert found, "the construct is a finding of some rule (held here, or fixed where it may be)"
    main = migrated["main.py"].decode()
    kept = "torch.jit.trace(" if kind == "trace" else "torch.jit.script("
    assert kept in main, "the TorchScript-only use keeps the call"
    try:
        actual, _ = run_program(tmp_path, "main.py", _Case.timeout, extra_files=migrated)
    except RuntimeError as exc:
        changed = sorted(rel for rel in migrated if migrated[rel] != files[rel])
        raise AssertionError(f"apply --unsafe-fixes broke the kept call (changed: {changed}):\n{exc}") from None
    compare_outputs(expected, actual, _Case())
