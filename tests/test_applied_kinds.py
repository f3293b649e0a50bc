"""No generated line hands an ExportedProgram-only API a value of another kind (issue 32).

Walks the code `apply` writes for every corpus case (its golden ``after/`` tree, which
tests/test_corpus.py keeps equal to what apply writes) and types the value each
``ExportedProgram``-only API receives: ``torch.export.save``, ``.module()``,
``.run_decompositions()``, ExecuTorch's ``to_edge``/``to_edge_transform_and_lower`` and
``torch._inductor.aoti_compile_and_package``. A value is followed through names bound in the same
function (every binding counts), ``self.attr`` stores of the class, calls of functions of the same
file (their returns) and tuple unpacking of such calls. It fails where the value is the module an
export made (``.module()``), a TorchScript object, or may be either an exported program or not."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
AFTER = sorted(p for p in (ROOT / "corpus").rglob("after") if p.is_dir())

EP = "ExportedProgram"
MODULE = "module (.module())"
TORCHSCRIPT = "TorchScript object"
PRODUCERS = {"torch.export.export": EP, "torch.export.load": EP, "torch.export.export_for_training": EP,
             "export": EP, "torch.jit.script": TORCHSCRIPT, "torch.jit.trace": TORCHSCRIPT,
             "torch.jit.load": TORCHSCRIPT, "torch.jit.freeze": TORCHSCRIPT, "torch.jit.trace_module": TORCHSCRIPT}
CONSUMERS = {"torch.export.save": 0, "to_edge": 0, "to_edge_transform_and_lower": 0, "exir.to_edge": 0,
             "torch._inductor.aoti_compile_and_package": 0}
METHODS = ("module", "run_decompositions")


def dotted(node: ast.AST) -> str:
    if isinstance(node, ast.Name):
        return node.id
    if isinstance(node, ast.Attribute):
        inner = dotted(node.value)
        return f"{inner}.{node.attr}" if inner else ""
    return ""


class FileKinds:
    """The kinds of the values of one file, as far as they can be told (else None)."""

    def __init__(self, tree: ast.Module) -> None:
        self.tree = tree
        self.parents: dict[ast.AST, ast.AST] = {}
        for node in ast.walk(tree):
            for child in ast.iter_child_nodes(node):
                self.parents[child] = node
        self.functions = {n.name: n for n in ast.walk(tree) if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef))}

    def scope(self, node: ast.AST) -> ast.AST:
        current = self.parents.get(node)
        while current is not None and not isinstance(current, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Module)):
            current = self.parents.get(current)
        return current or self.tree

    def kinds(self, expr: ast.AST, depth: int = 0) -> set:
        if depth > 8:
            return {None}
        if isinstance(expr, ast.Call):
            name = dotted(expr.func)
            if isinstance(expr.func, ast.Attribute) and expr.func.attr == "module" and not expr.args:
                return {MODULE}
            if isinstance(expr.func, ast.Attribute) and expr.func.attr == "run_decompositions":
                return {EP}
            if isinstance(expr.func, ast.Attribute) and expr.func.attr in ("eval", "to", "cpu", "cuda", "float", "half"):
                return {k if k != EP else "ExportedProgram with a module method" for k in self.kinds(expr.func.value, depth + 1)}
            if name in PRODUCERS:
                return {PRODUCERS[name]}
            if name in self.functions:
                returns = [r.value for r in ast.walk(self.functions[name]) if isinstance(r, ast.Return) and r.value is not None]
                return set().union(*(self.kinds(r, depth + 1) for r in returns)) if returns else {None}
            return {None}
        if isinstance(expr, ast.Name):
            return self._name(expr, depth)
        if isinstance(expr, ast.Attribute) and isinstance(expr.value, ast.Name) and expr.value.id == "self":
            stores = [n.value for n in ast.walk(self.tree) if isinstance(n, ast.Assign)
                      for t in n.targets if isinstance(t, ast.Attribute) and dotted(t) == f"self.{expr.attr}"]
            return set().union(*(self.kinds(v, depth + 1) for v in stores)) if stores else {None}
        return {None}

    def _name(self, name: ast.Name, depth: int) -> set:
        scope = self.scope(name)
        out: set = set()
        for node in ast.walk(scope):
            if self.scope(node) is not scope and node is not scope:
                continue
            if isinstance(node, ast.Assign):
                for target in node.targets:
                    if isinstance(target, ast.Name) and target.id == name.id:
                        out |= self.kinds(node.value, depth + 1)
                    elif isinstance(target, ast.Tuple) and any(isinstance(e, ast.Name) and e.id == name.id for e in target.elts):
                        out.add(None)  # an item of what the call returns: not followed
            elif isinstance(node, (ast.AnnAssign, ast.NamedExpr)) and isinstance(node.target, ast.Name) and node.target.id == name.id:
                if node.value is not None:
                    out |= self.kinds(node.value, depth + 1)
            elif isinstance(node, (ast.For, ast.With)) and name.id in {n.id for n in ast.walk(node) if isinstance(n, ast.Name)
                                                                     and isinstance(n.ctx, ast.Store) and self.parents.get(n) in (node, *getattr(node, "items", ()))}:
                out.add(None)
        return out or {None}

    def wrong(self) -> list[str]:
        """Each EP-only use whose value is known to be something else (or may be)."""
        problems = []
        for node in ast.walk(self.tree):
            if not isinstance(node, ast.Call):
                continue
            name = dotted(node.func)
            arg = None
            if name in CONSUMERS or name.rsplit(".", 1)[-1] in ("to_edge", "to_edge_transform_and_lower"):
                if node.args:
                    arg = node.args[CONSUMERS.get(name, 0)]
            elif isinstance(node.func, ast.Attribute) and node.func.attr in METHODS and not node.args:
                arg = node.func.value
            if arg is None:
                continue
            kinds = self.kinds(arg) - {None}
            bad = kinds - {EP}
            if bad:
                problems.append(f"line {node.lineno}: `{ast.unparse(node)}` gets {' or '.join(sorted(kinds))}")
        return problems


@pytest.mark.parametrize("after", AFTER, ids=lambda p: "/".join(p.parts[-3:-1]))
def test_exported_program_apis_get_exported_programs(after):
    problems = []
    for path in sorted(after.rglob("*.py")):
        found = FileKinds(ast.parse(path.read_text(encoding="utf-8"))).wrong()
        problems += [f"{path.relative_to(ROOT)}: {p}" for p in found]
    assert not problems, "\n".join(problems)


def test_the_walker_sees_a_module_handed_to_save_and_a_module_asked_for_module():
    """The walker itself: the class-1 break of issue 32 as apply once wrote it is found."""
    broken = ast.parse(
        "import torch\n\n\ndef export(model, x, path):\n"
        "    traced = torch.export.export(model, (x,)).module()\n"
        "    frozen = traced\n"
        "    torch.export.save(frozen, path)\n"
        "    return frozen.module()\n\n\n"
        "def fine(model, x, path):\n"
        "    ep = torch.export.export(model, (x,))\n"
        "    torch.export.save(ep, path)\n"
        "    return torch.export.load(path).module()\n")
    problems = FileKinds(broken).wrong()
    assert [p.split(":")[0] for p in problems] == ["line 7", "line 8"], problems
    assert all(MODULE in p for p in problems)


def test_the_walker_types_most_uses_over_the_corpus():
    """Not vacuous: most ExportedProgram-only uses that apply writes are typed (70 of 80 on
    2026-12-04; the rest take a function's parameter or an item of a returned tuple)."""
    typed = untyped = 0
    for after in AFTER:
        for path in after.rglob("*.py"):
            walker = FileKinds(ast.parse(path.read_text(encoding="utf-8")))
            for node in ast.walk(walker.tree):
                if not isinstance(node, ast.Call):
                    continue
                if dotted(node.func) in CONSUMERS and node.args:
                    arg = node.args[0]
                elif isinstance(node.func, ast.Attribute) and node.func.attr in METHODS and not node.args:
                    arg = node.func.value
                else:
                    continue
                if walker.kinds(arg) - {None}:
                    typed += 1
                else:
                    untyped += 1
    assert typed >= 60 and untyped < typed / 4, (typed, untyped)
