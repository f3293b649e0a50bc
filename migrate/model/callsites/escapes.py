"""Whether a value made by a producing call (a script, a trace) leaves the code in sight: saved,
lowered, frozen or read as TorchScript, or a plain value returned, stored or passed to code that
the program model cannot follow (a class of another package, a container). Such a value keeps
its kind: the call that made it cannot be rewritten to give it another (issue 32)."""

from __future__ import annotations

import libcst as cst

from ts2export.model.callsites.syntax import Asker
from ts2export.model.callsites.uses import Use, classify_use


def leaves(rule: Asker, ref: cst.CSTNode) -> bool:
    """Whether a value used as a plain value may leave the code in sight: anything but an argument
    of a constructor or of a function of the run (:func:`made_part_of`), directly or as a branch
    of ``a if c else b`` bound to a name that is used that way or called."""
    parent = rule.parent(ref)
    if isinstance(parent, cst.IfExp) and ref is not parent.test:
        from libcst.metadata import ScopeProvider

        assign = rule.parent(parent)
        if not (isinstance(assign, cst.Assign) and len(assign.targets) == 1
                and isinstance(assign.targets[0].target, cst.Name)):
            return True
        name = assign.targets[0].target
        scope = rule.get_metadata(ScopeProvider, name, None)
        if scope is None:
            return True
        return any(escapes(rule, classify_use(rule, r), through_branches=False)
                   for r in references(scope, name.value))
    return not made_part_of(rule, ref)


def escapes(rule: Asker, use: Use, through_branches: bool = True) -> bool:
    """Whether one use of a scripted value keeps it TorchScript: saved, lowered, frozen or read as
    TorchScript (``ep``, ``script-attr``), or a plain value that leaves the code in sight (returned,
    stored, passed on). ``through_branches``: follow a name bound to ``a if c else b`` one step
    (:func:`leaves`); a use met there is judged as it stands."""
    if use.kind in ("ep", "script-attr"):
        return True
    if use.kind != "value":
        return False
    return leaves(rule, use.node) if through_branches else not made_part_of(rule, use.node)


def made_part_of(rule: Asker, ref: cst.CSTNode) -> bool:
    """Whether a value is passed to a class's constructor (``nn.Sequential(conv, scripted)``: it
    becomes a submodule, called by its owner, which TorchScript can compile again, eager as it is)
    or to a function of the run (whose saves, loads and checks of the value the program model
    follows into the function, so that they are in the call's unit and it is not alone)."""
    arg = rule.parent(ref)
    call = rule.parent(arg) if isinstance(arg, cst.Arg) and arg.value is ref else None
    if not isinstance(call, cst.Call) or arg.star:
        return False
    names = rule.qualnames(call.func)
    if any(name.startswith(_MODULE_CONTAINERS) for name in names):
        return True  # `nn.Sequential(conv, scripted)`: a submodule of a container torch defines
    # A class or function of the run; not a class of another package, which may keep the value
    # and save, freeze or read it where the program model cannot see (`SimpleNamespace(model=m)`,
    # a registry's entry): the value leaves the code in sight (issue 32).
    return any(rule.context.program.kind_of(name) in ("function", "class") for name in names)


#: Modules of torch whose classes hold a module passed to them as a submodule.
_MODULE_CONTAINERS = ("torch.nn.", "torch.ao.nn.")


def references(scope, name: str) -> list[cst.CSTNode]:
    """Every reference to the assignments of ``name`` in ``scope``, nested scopes (comprehensions,
    inner functions) included."""
    return [ref.node for a in scope.assignments[name] for ref in a.references]
