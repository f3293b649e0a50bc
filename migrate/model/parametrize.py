"""What pytest passes to a test's parameter: the values listed by ``@pytest.mark.parametrize`` on
the test function or on its class (``pytest.param(...)`` entries unwrapped).

A test function is never called by the code of the run, so its parameters would have no value;
when a parametrize list names them, each parameter takes the matching item of every entry.
"""

from __future__ import annotations

import ast

from ts2export.model.names import Names
from ts2export.model.pyfile import Def, PyFile

PARAMETRIZE = ("pytest.mark.parametrize",)
PYTEST_PARAM = "pytest.param"
#: Entries followed in one list (a zoo's test may list a few dozen models; more is not followed).
MAX_ENTRIES = 64


def parametrized(names: Names, f: PyFile, d: Def, name: str) -> list[tuple[PyFile, ast.AST]] | None:
    """The argument-value expressions ``@pytest.mark.parametrize`` gives parameter ``name`` of the
    test ``d``, one per entry, or None when no parametrize decorator names it. An entry that is not
    a literal tuple (or ``pytest.param``) of the decorator's length gives None in its place (the
    caller cannot follow it). The list itself must be a literal, directly or through one name bound
    once to a literal."""
    owners = [d]
    parent = f.def_by_qualname.get(d.parent) if d.parent else None
    if parent is not None and parent.kind == "class":
        owners.append(parent)  # a class's parametrize applies to each of its test methods
    for owner in owners:
        for dec in owner.node.decorator_list:
            if not isinstance(dec, ast.Call) or names.qualified(f, dec.func) not in PARAMETRIZE:
                continue
            argnames = _argnames(dec)
            if argnames is None or name not in argnames:
                continue
            entries = _entries(f, dec)
            if entries is None:
                return [(f, None)]
            index = argnames.index(name)
            out: list = []
            for entry in entries:
                if isinstance(entry, ast.Call) and names.qualified(f, entry.func) == PYTEST_PARAM:
                    items = entry.args
                    if any(isinstance(a, ast.Starred) for a in items):
                        out.append((f, None))
                        continue
                elif len(argnames) == 1:
                    items = [entry]
                elif isinstance(entry, (ast.Tuple, ast.List)) and not any(isinstance(e, ast.Starred) for e in entry.elts):
                    items = entry.elts
                else:
                    out.append((f, None))
                    continue
                out.append((f, items[index]) if len(items) == len(argnames) else (f, None))
            return out
    return None


def _argnames(dec: ast.Call) -> list[str] | None:
    node = dec.args[0] if dec.args else next((k.value for k in dec.keywords if k.arg == "argnames"), None)
    if isinstance(node, ast.Constant) and isinstance(node.value, str):
        return [part.strip() for part in node.value.split(",") if part.strip()]
    if isinstance(node, (ast.Tuple, ast.List)) and all(isinstance(e, ast.Constant) and isinstance(e.value, str) for e in node.elts):
        return [e.value.strip() for e in node.elts]
    return None


def _entries(f: PyFile, dec: ast.Call) -> list[ast.AST] | None:
    node = dec.args[1] if len(dec.args) > 1 else next((k.value for k in dec.keywords if k.arg == "argvalues"), None)
    if isinstance(node, ast.Name):  # a list bound once at module level (or in the class)
        found = f.scope_at(node).lookup(node.id)
        node = found[1].single_value if found is not None else None
    if isinstance(node, (ast.List, ast.Tuple)) and not any(isinstance(e, ast.Starred) for e in node.elts):
        return list(node.elts)
    return None
