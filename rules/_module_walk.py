"""Which code of an ``nn.Module`` runs under ``forward`` (TSX4xx and the rules that look at what
``torch.export`` traces): whether a class is a module, the methods ``forward`` (and TorchScript's
other entry points) reach, and each statement of them with its typing scope
(:mod:`._control_flow`)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Callable, Iterator

import libcst as cst

from ._control_flow import MODULE_BASES, Analyzer, ModuleInfo, Scope, child_suites, module_info, self_attr


# What a base of an nn.Module class is named with (see is_module_class).
MODULE_BASE_PREFIXES = ("torch.nn.", "torch.jit.ScriptModule", "torch.jit._script.ScriptModule")


def screened_base_names(rule) -> Callable[[cst.CSTNode], set[str]]:
    """``rule.qualnames`` for :func:`is_module_class`, asked only of a base that may be named
    after ``torch.nn`` or ``ScriptModule`` (``Rule.may_be_named``, no scope analysis): a file whose
    classes derive from other things costs no scope analysis."""
    return lambda node: rule.qualnames(node) if rule.may_be_named(node, MODULE_BASE_PREFIXES, prefix=True) else set()


def torch_names(rule) -> Callable[[cst.CSTNode], set[str]]:
    """``rule.qualnames`` for the analysis of a module's methods (:func:`module_sites`), asked only
    of a node that may be named ``torch`` or ``torch.*``: every question that analysis asks (tensor
    annotations, ``torch`` functions, compiler tests, ``torch.jit.export``, module bases) is about
    such names, so the answer for any other (``self.layer``, a local) does not change it, and a
    file's locals cost no scope analysis."""
    return lambda node: (rule.qualnames(node) if rule.may_be_named(node, ("torch",))
                         or rule.may_be_named(node, ("torch.",), prefix=True) else set())


def is_module_class(cls: cst.ClassDef, qualname: Callable[[cst.CSTNode], set[str]], local_modules: set[str]) -> bool:
    for base in cls.bases:
        names = qualname(base.value)
        if any(n in MODULE_BASES for n in names):
            return True
        if any(n.startswith("torch.nn.") and n.rsplit(".", 1)[1][:1].isupper() and not n.startswith("torch.nn.functional.")
               for n in names):
            return True
        if isinstance(base.value, cst.Name) and base.value.value in local_modules:
            return True
    return False


def traced_methods(cls: cst.ClassDef, info: ModuleInfo, qualname: Callable[[cst.CSTNode], set[str]]) -> list[cst.FunctionDef]:
    """`forward`, methods compiled by TorchScript as entry points (`@torch.jit.export`,
    `@torch.jit.script_method`), and the methods they call."""
    roots = []
    for name, func in info.methods.items():
        exported = any(qualname(d.decorator) & {"torch.jit.export", "torch.jit.script_method", "torch.jit._script.script_method"}
                       for d in func.decorators)
        if name == "forward" or exported:
            roots.append(name)
    seen: list[str] = []
    todo = list(roots)
    while todo:
        name = todo.pop(0)
        if name in seen or name not in info.methods:
            continue
        seen.append(name)
        func = info.methods[name]
        params = list(func.params.params)
        if not params:
            continue
        self_name = params[0].name.value
        for node in _calls(func):
            attr = self_attr(node.func, self_name)
            if attr in info.methods and attr not in seen:
                todo.append(attr)
    order = {name: i for i, name in enumerate(info.methods)}
    return [info.methods[n] for n in sorted(seen, key=lambda n: order[n])]


def _calls(func: cst.FunctionDef) -> list[cst.Call]:
    found: list[cst.Call] = []

    class _V(cst.CSTVisitor):
        def visit_Call(self, node: cst.Call) -> None:
            found.append(node)

    func.body.visit(_V())
    return found


# --------------------------------------------------------------------------------------------------
# walking the traced code of nn.Module classes


@dataclass
class Site:
    """A statement inside a method that `forward` runs."""

    stmt: cst.BaseStatement | cst.If
    scope: Scope
    analyzer: Analyzer
    method: cst.FunctionDef  # the class's method holding the statement
    block: list  # the statements of the block that holds `stmt` (a one-element list for an `elif`)
    is_elif: bool = False
    top: bool = False  # `stmt` is a statement of its function's own body


def module_sites(cls: cst.ClassDef, qualname: Callable[[cst.CSTNode], set[str]], local_modules: set[str],
                 functions: dict[str, cst.FunctionDef] | None = None) -> Iterator[Site]:
    """Every statement of the methods `forward` runs, with its typing scope (nested functions
    included). ``functions``: the file's module-level functions, whose returns type the calls of
    them (a helper that returns the indices `nonzero` made)."""
    if not is_module_class(cls, qualname, local_modules):
        return
    info = module_info(cls, qualname)
    analyzer = Analyzer(qualname, info)
    analyzer.functions = dict(functions or {})
    for method in traced_methods(cls, info, qualname):
        scope = analyzer.scope(method, None, True)
        yield from _sites(list(method.body.body), scope, analyzer, method, top=True)


def function_sites(cls: cst.ClassDef, qualname: Callable[[cst.CSTNode], set[str]], local_modules: set[str],
                   functions: dict[str, cst.FunctionDef]) -> Iterator[Site]:
    """Every statement of the module-level ``functions`` of the file that the methods `forward` runs
    call by name, and those they call in turn (a detector's `batched_nms` calling `greedy_nms`):
    export traces them with the module. Their parameters are typed as TorchScript typed them."""
    if not functions or not is_module_class(cls, qualname, local_modules):
        return
    info = module_info(cls, qualname)
    analyzer = Analyzer(qualname, info)
    analyzer.functions = functions
    todo = [call for method in traced_methods(cls, info, qualname) for call in _calls(method)]
    seen: list[str] = []
    while todo:
        func = todo.pop(0).func
        if isinstance(func, cst.Name) and func.value in functions and func.value not in seen:
            seen.append(func.value)
            todo.extend(_calls(functions[func.value]))
    for name in seen:
        fn = functions[name]
        yield from _sites(list(fn.body.body), analyzer.scope(fn, None, False), analyzer, fn, top=True)


def _sites(block: list, scope: Scope, analyzer: Analyzer, method: cst.FunctionDef, is_elif: bool = False,
           top: bool = False) -> Iterator[Site]:
    for stmt in block:
        yield Site(stmt, scope, analyzer, method, block, is_elif, top)
        if isinstance(stmt, cst.FunctionDef):
            inner = analyzer.scope(stmt, scope, False)
            yield from _sites(list(stmt.body.body), inner, analyzer, method, top=True)
        elif isinstance(stmt, cst.ClassDef):
            continue
        elif isinstance(stmt, cst.If):
            compiled = _compiler_test(stmt.test, analyzer.qualname)  # code the compiler never sees
            if compiled is not False:
                yield from _sites(list(stmt.body.body), scope, analyzer, method)
            if compiled is True:
                continue
            if isinstance(stmt.orelse, cst.If):
                yield from _sites([stmt.orelse], scope, analyzer, method, is_elif=True)
            elif isinstance(stmt.orelse, cst.Else):
                yield from _sites(list(stmt.orelse.body.body), scope, analyzer, method)
        else:
            for suite in child_suites(stmt):
                yield from _sites(list(suite.body), scope, analyzer, method)


#: Questions a model asks to keep code away from the compiler: TorchScript compiled only the branch
#: where `is_scripting()` is True, and `torch.export` traces only the one where `is_exporting()`
#: (or `is_compiling()`) is.
COMPILER_TESTS = {"torch.jit.is_scripting", "torch._jit_internal.is_scripting", "torch.compiler.is_exporting",
                  "torch.compiler.is_compiling", "torch._dynamo.is_compiling"}


def _compiler_test(test: cst.BaseExpression, qualname: Callable[[cst.CSTNode], set[str]]) -> bool | None:
    """True for `if X():` and False for `if not X():` where X asks whether a compiler runs the code
    (the other branch is never compiled, nor exported); None for any other test."""
    negated = False
    while isinstance(test, cst.UnaryOperation) and isinstance(test.operator, cst.Not):
        test, negated = test.expression, not negated
    if isinstance(test, cst.Call) and not test.args and qualname(test.func) & COMPILER_TESTS:
        return not negated
    return None
