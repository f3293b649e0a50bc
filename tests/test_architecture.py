"""The layout's boundaries (docs/architecture.md): each package imports only what lies below it, no
two modules import each other in a circle, and no module or class outgrows what a reader can hold."""

from __future__ import annotations

import ast
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
PACKAGE_DIRS = {"ts2export": ROOT / "migrate", "ts2export.rules": ROOT / "rules"}

#: What each part may import of ts2export (besides itself), top to bottom. A name stands for a
#: module and everything under it.
ALLOWED = {
    "ts2export.cli": None,  # the top: anything
    "ts2export.__main__": {"ts2export.cli"},
    "ts2export.harness": {"ts2export", "ts2export.engine", "ts2export.ci", "ts2export.record", "ts2export.runner",
                          "ts2export.textio"},
    "ts2export.runner": set(),  # the standard library (and what its server is told to preload)
    "ts2export.server": {"ts2export", "ts2export.engine", "ts2export.rule"},  # pygls (the `server` extra)
    "ts2export.ci": {"ts2export", "ts2export.engine", "ts2export.rule", "ts2export.textio"},
    "ts2export.artifact": {"ts2export.textio"},
    "ts2export.engine": {"ts2export", "ts2export.model", "ts2export.rule", "ts2export.rules", "ts2export.edits",
                         "ts2export.textio", "ts2export.record.recording"},
    "ts2export.record.hooks": set(),  # runs inside the user's interpreter: nothing of ts2export
    "ts2export.record": {"ts2export.textio"},
    "ts2export.rules": {"ts2export.rule"},
    "ts2export.rule": {"ts2export.model.view", "ts2export.model.callsites", "ts2export.edits", "ts2export.quoting"},
    "ts2export.model": {"ts2export.edits", "ts2export.quoting"},
    "ts2export.edits": set(),
    "ts2export.quoting": set(),
    "ts2export.textio": set(),
    "ts2export": set(),  # the package itself (its version)
}
MAX_MODULE_LINES = 800
MAX_CLASS_LINES = 400


def modules() -> dict[str, Path]:
    out = {}
    for package, folder in PACKAGE_DIRS.items():
        for path in sorted(folder.rglob("*.py")):
            rel = path.relative_to(folder).with_suffix("")
            parts = [p for p in rel.parts if p != "__init__"]
            if package == "ts2export" and parts and parts[0] == "rules":
                continue
            out[".".join([package, *parts])] = path
    return out


def imports_of(name: str, path: Path, known: set[str] | None = None) -> set[str]:
    """The ts2export modules (or packages) ``name`` imports, anywhere in it, relative ones resolved
    (``from pkg import mod`` imports the module ``pkg.mod``, not the package's ``__init__``)."""
    known = set(modules()) if known is None else known
    tree = ast.parse(path.read_text(encoding="utf-8"))
    package = name if path.name == "__init__.py" else name.rsplit(".", 1)[0]
    found = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            found.update(a.name for a in node.names)
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                parts = package.split(".")
                parts = parts[: len(parts) - (node.level - 1)]
                base = ".".join([*parts, *([node.module] if node.module else [])])
            subs = {f"{base}.{a.name}" for a in node.names}
            found.update(subs)
            if not subs <= known:
                found.add(base)
    return {f for f in found if f == "ts2export" or f.startswith("ts2export.")}


def graph() -> dict[str, set[str]]:
    """Module -> the modules of the tree it imports (a package's ``__init__`` counts as a module)."""
    mods = modules()
    out = {}
    for name, path in mods.items():
        out[name] = {i for i in imports_of(name, path, set(mods)) if i in mods and i != name}
    return out


def part_of(name: str) -> str:
    """The most specific entry of ALLOWED that ``name`` lies in."""
    best = ""
    for part in ALLOWED:
        if (name == part or name.startswith(part + ".")) and len(part) > len(best):
            best = part
    return best


def test_each_part_imports_only_what_lies_below_it():
    problems = []
    for name, path in modules().items():
        part = part_of(name)
        allowed = ALLOWED[part]
        if allowed is None:
            continue
        for imported in imports_of(name, path):
            if imported == part or imported.startswith(part + "."):
                continue
            if any(imported == a or imported.startswith(a + ".") for a in allowed):
                continue
            if imported == "ts2export.__version__" and "ts2export" in allowed:
                continue
            problems.append(f"{name} imports {imported}")
    assert not problems, "\n".join(problems)


def test_rules_import_only_the_rule_api():
    for name, path in modules().items():
        if not name.startswith("ts2export.rules."):
            continue
        for imported in imports_of(name, path):
            assert (imported == "ts2export.rule" or imported.startswith("ts2export.rule.")
                    or imported.startswith("ts2export.rules._")), f"{name} imports {imported}"


def test_the_engine_names_no_rule():
    for name, path in modules().items():
        if name.startswith("ts2export.rules"):
            continue
        for imported in imports_of(name, path):
            assert not imported.startswith("ts2export.rules."), f"{name} imports the rule {imported}"


def test_no_import_circles():
    g = graph()
    index, low, stack, on_stack, circles = {}, {}, [], set(), []

    def visit(v: str) -> None:  # Tarjan's strongly connected components
        index[v] = low[v] = len(index)
        stack.append(v)
        on_stack.add(v)
        for w in sorted(g[v]):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on_stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            component = []
            while True:
                w = stack.pop()
                on_stack.discard(w)
                component.append(w)
                if w == v:
                    break
            if len(component) > 1:
                circles.append(sorted(component))

    for v in sorted(g):
        if v not in index:
            visit(v)
    assert not circles, circles


def test_no_module_or_class_outgrows_a_reader():
    too_big = []
    for folder in ("migrate", "rules", "scripts", "tests"):
        for path in sorted((ROOT / folder).rglob("*.py")):
            text = path.read_text(encoding="utf-8")
            lines = len(text.splitlines())
            if lines > MAX_MODULE_LINES:
                too_big.append(f"{path.relative_to(ROOT)}: {lines} lines")
            for node in ast.walk(ast.parse(text)):
                if isinstance(node, ast.ClassDef) and node.end_lineno - node.lineno + 1 > MAX_CLASS_LINES:
                    too_big.append(f"{path.relative_to(ROOT)}: class {node.name}, {node.end_lineno - node.lineno + 1} lines")
    assert not too_big, "\n".join(too_big)


def test_every_package_says_what_it_holds_and_may_import():
    for name, path in modules().items():
        if path.name != "__init__.py" or name.startswith("ts2export.rules"):
            continue
        doc = ast.get_docstring(ast.parse(path.read_text(encoding="utf-8"))) or ""
        assert len(doc.splitlines()) >= 3, f"{name} has no docstring saying what it holds"
        if name not in ("ts2export", "ts2export.rule", "ts2export.record.hooks", "ts2export.model.callsites"):
            assert "import" in doc.lower(), f"{name}'s docstring does not say what it may import"
