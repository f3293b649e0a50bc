"""Whether a rewritten test file still tests: every test function keeps its assertions, and no
assertion the rewrite made compares a thing with itself.

A scriptability test (`op_jit = torch.jit.script(op)`, then `assert_close(op(x), op_jit(x))`)
whose script became the eager module (`op_jit = op`) would pass whatever `op` computes. The
harness runs :func:`weakened` on every test file a migration rewrote (the corpus goldens, the
generated programs) and fails on what it returns.

Assertions counted per function: ``assert`` statements, calls of a name starting with ``assert``
(``torch.testing.assert_close``, ``self.assertEqual``, ``np.testing.assert_allclose``), and
``pytest.raises`` / ``warns`` blocks. A self-comparison: an ``assert a == b`` (or ``is``, ``<=``,
...), an ``assert*`` call or ``torch.allclose`` / ``torch.equal`` whose two compared operands are
the same code once the function's plain aliases (``op_jit = op``) are read through.
"""

from __future__ import annotations

import ast
from collections import Counter

#: Calls that compare their first two arguments.
COMPARING = {"assert_close", "assert_allclose", "assert_equal", "assertEqual", "assertAlmostEqual", "allclose",
             "equal", "assert_array_equal", "assert_array_almost_equal", "isclose"}


def weakened(before: str, after: str) -> list[str]:
    """What the rewrite took from the tests of a file: one sentence per test function that lost
    assertions or went missing, and per assertion it made compare a thing with itself."""
    old, new = _functions(before), _functions(after)
    problems: list[str] = []
    for name, fn in old.items():
        if not name.rsplit(".", 1)[-1].startswith("test"):
            continue
        if name not in new:
            problems.append(f"`{name}` is gone")
            continue
        lost = _assertions(fn) - _assertions(new[name])
        if lost > 0:
            problems.append(f"`{name}` lost {lost} assertion(s)")
        made = Counter(_self_comparisons(new[name])) - Counter(_self_comparisons(fn))
        problems += [f"`{name}` compares a thing with itself: `{text}`" for text in made]
    return problems


def _functions(source: str) -> dict[str, ast.FunctionDef]:
    out: dict[str, ast.FunctionDef] = {}

    def walk(body, prefix: str) -> None:
        for node in body:
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
                out[prefix + node.name] = node
            elif isinstance(node, ast.ClassDef):
                walk(node.body, f"{prefix}{node.name}.")

    walk(ast.parse(source).body, "")
    return out


def _name(func: ast.AST) -> str:
    return func.attr if isinstance(func, ast.Attribute) else func.id if isinstance(func, ast.Name) else ""


def _assertions(fn: ast.AST) -> int:
    n = 0
    for node in ast.walk(fn):
        if isinstance(node, ast.Assert):
            n += 1
        elif isinstance(node, ast.Call) and _name(node.func).startswith("assert"):
            n += 1
        elif isinstance(node, (ast.With, ast.AsyncWith)):
            n += sum(isinstance(i.context_expr, ast.Call) and _name(i.context_expr.func) in ("raises", "warns")
                     for i in node.items)
    return n


def _self_comparisons(fn: ast.AST) -> list[str]:
    aliases: dict[str, str] = {}
    for node in ast.walk(fn):
        if (isinstance(node, ast.Assign) and len(node.targets) == 1 and isinstance(node.targets[0], ast.Name)
                and isinstance(node.value, ast.Name)):
            aliases[node.targets[0].id] = node.value.id

    def canonical(expr: ast.AST) -> str:
        class Unalias(ast.NodeTransformer):
            def visit_Name(self, n: ast.Name) -> ast.AST:
                seen, name = set(), n.id
                while name in aliases and name not in seen:
                    seen.add(name)
                    name = aliases[name]
                return ast.copy_location(ast.Name(name, ast.Load()), n)

        return ast.dump(Unalias().visit(ast.parse(ast.unparse(expr), mode="eval")).body)

    found: list[str] = []
    for node in ast.walk(fn):
        pairs: list[tuple[ast.AST, ast.AST]] = []
        if isinstance(node, ast.Assert) and isinstance(node.test, ast.Compare) and len(node.test.comparators) == 1:
            pairs.append((node.test.left, node.test.comparators[0]))
        elif isinstance(node, ast.Call) and _name(node.func) in COMPARING and len(node.args) >= 2:
            pairs.append((node.args[0], node.args[1]))
        for a, b in pairs:
            if canonical(a) == canonical(b):
                found.append(ast.unparse(node).splitlines()[0][:120])
    return found
