"""Variants of corpus programs, written the way programs outside this repository look.

Each variant rewrites a runnable corpus program (all its files) into another program that must run
the same before migration; the differential harness (tests/test_never_broken.py) then checks that
``apply`` and ``apply --unsafe-fixes`` never break it.

* ``paths``: every artifact path literal (``"model.pt"``) is built at run time instead, spelled in
  turn as ``os.path.join(os.getcwd(), ...)``, an f-string, ``str(pathlib.Path(os.getcwd()) / ...)``
  and ``os.getcwd() + "/..."``, so that a writer and its reader usually spell the path differently.
* ``batch1``: the example inputs of ``torch.jit.trace`` get size 1 in their first dimension, the
  most common example in deployment scripts.
* ``hidden_inputs``: each ``torch.jit.trace(model, example)`` call moves into a helper function
  that receives the example as a parameter, as export scripts written around a ``trace_and_save``
  utility do.
* ``passed_along``: what each ``name = torch.jit.trace(...)`` / ``torch.jit.script(...)`` makes
  passes through an alias, an attribute of a holder object, a function's return and a function of
  a second module (``passing_along.py``, added) before the program saves, loads or calls it
  (issue 32): code the program model cannot follow, so the value must keep its kind.
* ``handed_over``: the same through code it can follow: an alias, a function's return (its
  argument) and a function of the second module; ``frozen_over`` with ``torch.jit.freeze`` as the
  alias (programs whose value cannot be frozen, a function or a training-mode module, are skipped).
"""

from __future__ import annotations

from functools import lru_cache

import libcst as cst

ARTIFACT_SUFFIXES = (".pt", ".ptl", ".pt2", ".pte", ".pth")
FACTORIES = {"randn", "rand", "zeros", "ones", "empty", "full", "randint"}


@lru_cache(maxsize=None)
def _parse(source: str) -> cst.Module:
    """A file's tree, parsed once for every variant (collection asks each variant of each program)."""
    return cst.parse_module(source)


def _with_imports(module: cst.Module, *modules: str) -> cst.Module:
    """``import m`` for each of ``modules`` the module does not import at its top level, after its
    docstring and ``__future__`` imports (libcst's AddImportsVisitor does this with a scope
    analysis, which made collecting the variants take most of a minute)."""
    have = {
        cst.Module(body=[]).code_for_node(alias.name)
        for line in module.body if isinstance(line, cst.SimpleStatementLine)
        for stmt in line.body if isinstance(stmt, cst.Import)
        for alias in stmt.names if alias.asname is None
    }
    new = [cst.parse_statement(f"import {name}\n") for name in modules if name not in have]
    if not new:
        return module
    body = list(module.body)
    i = 0
    if body and isinstance(body[0], cst.SimpleStatementLine) and isinstance(body[0].body[0], cst.Expr) \
            and isinstance(body[0].body[0].value, (cst.SimpleString, cst.ConcatenatedString)):
        i = 1
    while i < len(body) and isinstance(body[i], cst.SimpleStatementLine) and isinstance(body[i].body[0], cst.ImportFrom) \
            and isinstance(body[i].body[0].module, cst.Name) and body[i].body[0].module.value == "__future__":
        i += 1
    return module.with_changes(body=[*body[:i], *new, *body[i:]])


class _Paths(cst.CSTTransformer):
    SPELLINGS = (
        'os.path.join(os.getcwd(), "{v}")',
        'f"{{os.getcwd()}}/{v}"',
        'str(pathlib.Path(os.getcwd()) / "{v}")',
        'os.getcwd() + "/{v}"',
    )

    def __init__(self) -> None:
        super().__init__()
        self.count = 0
        self.depth_fstring = 0

    def visit_FormattedString(self, node: cst.FormattedString) -> None:
        self.depth_fstring += 1

    def leave_FormattedString(self, original_node, updated_node):
        self.depth_fstring -= 1
        return updated_node

    def leave_Expr(self, original_node: cst.Expr, updated_node: cst.Expr):
        return updated_node

    def visit_Expr(self, node: cst.Expr) -> bool:
        return not isinstance(node.value, cst.SimpleString)  # docstrings stay

    def leave_SimpleString(self, original_node: cst.SimpleString, updated_node: cst.SimpleString):
        value = original_node.evaluated_value
        if self.depth_fstring or not isinstance(value, str) or not value.endswith(ARTIFACT_SUFFIXES):
            return updated_node
        if value.startswith("/") or "{" in value or '"' in value or "\\" in value:
            return updated_node
        spelling = self.SPELLINGS[self.count % len(self.SPELLINGS)]
        self.count += 1
        return cst.parse_expression(spelling.format(v=value))


def paths(source: str) -> str:
    module = _parse(source)
    transformer = _Paths()
    new = module.visit(transformer)
    if not transformer.count:
        return source
    return _with_imports(new, "os", "pathlib").code


def _is_trace(call: cst.Call) -> bool:
    code = cst.Module(body=[]).code_for_node(call.func)
    return code.endswith(("jit.trace", "jit.trace_module")) or code in ("trace", "trace_module")


class _TraceExamples(cst.CSTVisitor):
    def __init__(self) -> None:
        super().__init__()
        self.names: set[str] = set()

    def visit_Call(self, node: cst.Call) -> None:
        if not _is_trace(node):
            return
        positional = [a for a in node.args if a.keyword is None]
        example = positional[1].value if len(positional) > 1 else None
        for e in (example.elements if isinstance(example, (cst.Tuple, cst.List)) else [example]):
            value = e.value if isinstance(e, cst.BaseElement) else e
            if isinstance(value, cst.Name):
                self.names.add(value.value)


def _batch_one(call: cst.Call) -> cst.Call:
    """``torch.randn(4, 3, ...)`` -> ``torch.randn(1, 3, ...)`` (sizes given positionally or as a tuple)."""
    func = call.func
    short = func.attr.value if isinstance(func, cst.Attribute) else getattr(func, "value", "")
    if short not in FACTORIES or not call.args:
        return call
    index = 2 if short == "randint" else 0
    if short == "randint":
        sizes = next((a for a in call.args if isinstance(a.value, (cst.Tuple, cst.List))), None)
        if sizes is None or not sizes.value.elements:
            return call
        first = sizes.value.elements[0].with_changes(value=cst.Integer("1"))
        new_sizes = sizes.value.with_changes(elements=[first, *sizes.value.elements[1:]])
        return call.with_changes(args=[a.with_changes(value=new_sizes) if a is sizes else a for a in call.args])
    first = call.args[index]
    if isinstance(first.value, (cst.Tuple, cst.List)) and first.value.elements:
        elements = [first.value.elements[0].with_changes(value=cst.Integer("1")), *first.value.elements[1:]]
        new = first.with_changes(value=first.value.with_changes(elements=elements))
    elif isinstance(first.value, cst.Integer):
        new = first.with_changes(value=cst.Integer("1"))
    else:
        return call
    return call.with_changes(args=[new if a is first else a for a in call.args])


class _Batch1(cst.CSTTransformer):
    def __init__(self, names: set[str]) -> None:
        super().__init__()
        self.names = names
        self.changed = 0

    def leave_Call(self, original_node: cst.Call, updated_node: cst.Call):
        if not _is_trace(original_node):
            return updated_node
        positional = [a for a in updated_node.args if a.keyword is None]
        if len(positional) < 2:
            return updated_node
        example = positional[1].value
        if isinstance(example, cst.Call):
            new = _batch_one(example)
        elif isinstance(example, (cst.Tuple, cst.List)):
            new = example.with_changes(elements=[
                e.with_changes(value=_batch_one(e.value)) if isinstance(e.value, cst.Call) else e for e in example.elements])
        else:
            return updated_node
        if new is example:
            return updated_node
        self.changed += 1
        return updated_node.with_changes(args=[a.with_changes(value=new) if a is positional[1] else a for a in updated_node.args])

    def leave_Assign(self, original_node: cst.Assign, updated_node: cst.Assign):
        if len(updated_node.targets) != 1 or not isinstance(updated_node.targets[0].target, cst.Name):
            return updated_node
        if updated_node.targets[0].target.value not in self.names or not isinstance(updated_node.value, cst.Call):
            return updated_node
        new = _batch_one(updated_node.value)
        if new is updated_node.value:
            return updated_node
        self.changed += 1
        return updated_node.with_changes(value=new)


def batch1(source: str) -> str:
    module = _parse(source)
    finder = _TraceExamples()
    module.visit(finder)
    transformer = _Batch1(finder.names)
    new = module.visit(transformer)
    return new.code if transformer.changed else source


HELPER = '''

def _trace_with(model, example):
    """Trace helper of the export script: the example arrives as a parameter."""
    return torch.jit.trace(model, example)
'''


class _HideInputs(cst.CSTTransformer):
    def __init__(self) -> None:
        super().__init__()
        self.changed = 0

    def leave_Call(self, original_node: cst.Call, updated_node: cst.Call):
        code = cst.Module(body=[]).code_for_node(original_node.func)
        if not code.endswith("jit.trace"):
            return updated_node
        positional = [a for a in updated_node.args if a.keyword is None]
        if len(positional) != 2 or len(updated_node.args) != 2:
            return updated_node
        self.changed += 1
        return updated_node.with_changes(func=cst.Name("_trace_with"))


def hidden_inputs(source: str) -> str:
    module = _parse(source)
    transformer = _HideInputs()
    new = module.visit(transformer)
    if not transformer.changed:
        return source
    body = list(new.body)
    guard = next((i for i, stmt in enumerate(body) if isinstance(stmt, cst.If)
                  and "__main__" in cst.Module(body=[]).code_for_node(stmt.test)), None)
    if guard is None:
        return new.code.rstrip("\n") + "\n" + HELPER
    # before `if __name__ == "__main__":`, which runs the program (after it, the helper is not yet defined)
    helper = cst.parse_module(HELPER.lstrip("\n")).body
    return new.with_changes(body=body[:guard] + list(helper) + body[guard:]).code


class _PassAlong(cst.CSTTransformer):
    def __init__(self, followable: bool = False, frozen: bool = False) -> None:
        super().__init__()
        self.changed = 0
        self.followable = followable
        self.frozen = frozen

    def leave_SimpleStatementLine(self, original_node, updated_node):
        if len(updated_node.body) != 1 or not isinstance(updated_node.body[0], cst.Assign):
            return updated_node
        assign = updated_node.body[0]
        if len(assign.targets) != 1 or not isinstance(assign.targets[0].target, cst.Name):
            return updated_node
        value = assign.value
        if not isinstance(value, cst.Call):
            return updated_node
        func = cst.Module(body=[]).code_for_node(value.func)
        if not func.endswith(("jit.trace", "jit.script")):
            return updated_node
        name = assign.targets[0].target.value
        self.changed += 1
        call = cst.Module(body=[]).code_for_node(value)
        lines = [
            f"_{name}_made = {call}",
            f"_{name}_kept = types.SimpleNamespace(model=_{name}_made)",
            f"def _{name}_handed():\n    return _{name}_kept.model",
            f"{name} = passing_along.passed(_{name}_handed())",
        ] if not self.followable else [
            f"_{name}_made = {call}",
            f"_{name}_alias = torch.jit.freeze(_{name}_made)" if self.frozen else f"_{name}_alias = _{name}_made",
            f"def _{name}_handed(model):\n    return model",
            f"{name} = passing_along.passed(_{name}_handed(_{name}_alias))",
        ]
        statements = [cst.parse_statement(line + "\n") for line in lines]
        statements[0] = statements[0].with_changes(leading_lines=updated_node.leading_lines)
        return cst.FlattenSentinel(statements)


PASSING_ALONG = b'''"""A helper module of the program: hands back what it is given, as registries and wrappers do."""


def passed(model):
    return model
'''


def _pass_along(source: str, followable: bool = False, frozen: bool = False) -> str:
    transformer = _PassAlong(followable, frozen)
    new = _parse(source).visit(transformer)
    if not transformer.changed:
        return source
    return _with_imports(new, *(("passing_along",) if followable else ("types", "passing_along"))).code


def passed_along(source: str) -> str:
    return _pass_along(source)


def handed_over(source: str, frozen: bool = False) -> str:
    return _pass_along(source, followable=True, frozen=frozen)


VARIANTS = {"paths": paths, "batch1": batch1, "hidden_inputs": hidden_inputs, "passed_along": passed_along,
            "handed_over": handed_over, "frozen_over": lambda source: handed_over(source, frozen=True)}
#: A text each variant needs to find in a file to change it (the rest is not parsed: collection
#: asks every variant of every corpus program).
_JIT_ENTRY = ("jit.trace", "jit.script")
NEEDS = {
    "paths": lambda text: any(suffix + quote in text for suffix in ARTIFACT_SUFFIXES for quote in "\"'"),
    "batch1": lambda text: "trace" in text,
    "hidden_inputs": lambda text: "jit.trace" in text,
    "passed_along": lambda text: any(e in text for e in _JIT_ENTRY),
    "handed_over": lambda text: any(e in text for e in _JIT_ENTRY),
    "frozen_over": lambda text: any(e in text for e in _JIT_ENTRY),
}

#: Files a variant adds to the program it makes.
EXTRA_FILES = {kind: {"passing_along.py": PASSING_ALONG} for kind in ("passed_along", "handed_over", "frozen_over")}


def variant(files: dict[str, bytes], name: str) -> dict[str, bytes] | None:
    """The variant ``name`` of a program (relative path -> bytes), or None when it changes nothing."""
    transform = VARIANTS[name]
    out: dict[str, bytes] = {}
    for rel, data in files.items():
        if rel.endswith(".py"):
            text = data.decode("utf-8")
            out[rel] = transform(text).encode("utf-8") if NEEDS[name](text) else data
        else:
            out[rel] = data
    if out == files:
        return None
    return {**out, **EXTRA_FILES.get(name, {})}
