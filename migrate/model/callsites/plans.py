"""A *plan* says how a producing call and the uses of its value are rewritten, or why they cannot
be: the shared part (uses, ``.eval()`` dropped, the value returned to callers in this file,
suppression, the uses that save or lower the program)."""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Callable

import libcst as cst

from ts2export.edits import Applicability, Edit, Import
from ts2export import quoting
from ts2export.model.callsites.bindings import binding, definition
from ts2export.model.callsites.escapes import leaves
from ts2export.model.callsites.examples import ExportArgs
from ts2export.model.callsites.syntax import (
    Asker, FREEZE, JIT_LOAD, JIT_SAVE, LITE_METHODS, MODULE_METHODS, OPTIMIZE, OPTIMIZE_FOR_INFERENCE, SCRIPT, TRACE,
    TRACE_MODULE, module_of, argument, enclosing, shown,
)
from ts2export.model.callsites.uses import Use, is_false, classify_use, mode_edit, value_expr
from ts2export.model.torchapi import INERT_CALLS


@dataclass
class Plan:
    edits: list[Edit] = field(default_factory=list)
    imports: list[Import] = field(default_factory=list)
    applicability: Applicability = Applicability.UNSAFE
    ep_mode: bool = False  # the name holds the ExportedProgram (it is saved/lowered), calls go through .module()
    notes: list[str] = field(default_factory=list)
    problem: str | None = None
    methods: list[str] = field(default_factory=list)  # entry points besides forward that the reader calls
    multi: bool = False  # the value is a dict of programs, one per method (its saves are rewritten with it)
    eager: bool = False  # the module runs eager: its value never leaves the code that made it (see plan_eager)
    alternative: "Plan | None" = None  # the eager plan, for the program model to take if the export must wait


def _module_call(ref: cst.BaseExpression) -> cst.Call:
    return cst.Call(func=cst.Attribute(value=ref, attr=cst.Name("module")))


def plan_uses(rule: Asker, call: cst.Call, new_code: Callable[[bool], str], what: str) -> Plan:
    """Rewrite the producing ``call`` (``new_code(ep_mode)`` is its replacement) and its value's uses."""
    plan = Plan()
    value = value_expr(rule, call)
    b = binding(rule, value)
    if b.problem:
        plan.problem = f"cannot follow the {what} ({b.problem})"
        return plan
    uses, why = _through_freezes(rule, [classify_use(rule, u) for u in b.uses if not _inert(rule, u)])
    if why:
        plan.problem = why
        return plan
    for u in uses:
        if u.kind == "attr-call" and u.detail not in MODULE_METHODS:
            plan.problem = (
                f"`.{u.detail}(...)` is called on the {what} (line {rule.position(u.node).start.line}); an exported "
                "program has one entry point, `forward`: export that method as its own program "
                "(see docs/callsites.md, several entry points) and call it there"
            )
            return plan
        if u.kind == "mode" and u.detail == "train":
            _, why = mode_edit(rule, u)
            if why:
                plan.problem = why + f" (line {rule.position(u.node).start.line})"
                return plan
    plan.ep_mode = any(u.kind == "ep" for u in uses)
    for u in uses:
        if u.kind == "ep":
            why = ep_use_problem(rule, u)
            if why:
                plan.problem = f"{why} (line {rule.position(u.node).start.line}), so the {what} stays as it is"
                return plan
    made = rule.position(call)
    for u in uses:
        at = rule.position(u.node).start
        if (made.start.line, made.start.column) <= (at.line, at.column) <= (made.end.line, made.end.column):
            continue  # `model = torch.jit.script(model)`: the call's own argument
        why = _handed_on(rule, u, what)
        if why:
            plan.problem = why
            return plan
    returned = [u for u in uses if u.kind == "value" and isinstance(rule.parent(u.node), cst.Return)]
    if returned:
        problem = _callers(rule, returned[0].node, plan, what)
        if problem:
            plan.problem = problem
            return plan
    for assign, method in b.rebinds:
        line = rule.parent(assign)
        single = isinstance(line, cst.SimpleStatementLine) and len(line.body) == 1
        if method == "eval" or (method == "train" and is_false(argument(assign.value, 0, "mode"))):
            if not single:
                plan.problem = f"`{shown(assign)}` shares its line with other statements"
                return plan
            plan.edits.append(Edit(line, cst.RemovalSentinel.REMOVE))
        elif method == "train":
            plan.problem = (f"`{shown(assign)}`: `.train()` on an exported module is not supported: training mode is "
                            "fixed at export time")
            return plan
        elif plan.ep_mode:
            plan.problem = f"`{shown(assign)}` rebinds the {what}, which is also saved: move the program with torch.export.passes.move_to_device_pass"
            return plan
        elif method in ("to", "cuda", "cpu") and not any("move_to_device_pass" in n for n in plan.notes):
            plan.notes.append(f"`.{method}(...)` on the exported module moves its parameters; tensors created in the graph keep "
                              "their device (use torch.export.passes.move_to_device_pass on the program if that matters)")
    in_place = b.target is None
    code_new = new_code(plan.ep_mode) + ("" if plan.ep_mode else ".module()")
    plan.edits.append(Edit(value, cst.parse_expression(code_new)))
    if in_place:
        return plan
    for u in uses:
        if u.kind == "mode":
            edit, _ = mode_edit(rule, u)
            if edit is not None:
                plan.edits.append(edit)
            if not plan.notes or "eval" not in plan.notes[-1]:
                plan.notes.append("`.eval()` dropped: an exported module runs in the mode it was exported in")
        elif u.kind == "ep":
            continue  # the save/lower rules rewrite these
        elif plan.ep_mode:
            plan.edits.append(Edit(u.node, _module_call(u.node)))
        note = f"`.{u.detail}` now shows the FX graph of the exported module"
        if u.kind == "script-attr" and note not in plan.notes:  # once, however often it is read
            plan.notes.append(note)
    return plan


def _through_freezes(rule: Asker, uses: list[Use]) -> tuple[list[Use], str | None]:
    """The uses with ``torch.jit.freeze(v)`` / ``torch.jit.optimize_for_inference(v)`` replaced by the
    uses of their result: both return (a copy of) ``v``, and TSX601 rewrites the freeze to ``v``
    itself, so ``frozen = freeze(traced); frozen.save(p)`` saves the program (TSX602 has no fix: its
    unit waits); and the uses of an alias (``alias = traced``) likewise. A result that cannot be
    followed is a reason to stay."""
    out: list[Use] = []
    todo = list(uses)
    followed: set[int] = set()  # the freeze calls whose result is followed: `m = freeze(m)` reads itself
    while todo:
        u = todo.pop(0)
        # `freeze(v)`, and `freeze(v.eval())`: the mode switch is dropped with the freeze's own rewrite
        arg = rule.parent(u.node) if u.kind == "value" else rule.parent(u.outer) if u.kind == "mode" else None
        if u.kind == "value" and _is_alias(rule, u.node) and id(u.node) not in followed:
            followed.add(id(u.node))  # `alias = traced`: the uses of the alias are uses of the value
            b = binding(rule, u.node)
            if b.problem:
                return out, f"cannot follow the alias `{shown(arg.targets[0].target)}` ({b.problem})"
            if b.target is None:
                out.append(u)
                continue
            if b.rebinds:
                return out, f"`{shown(b.target)}`, an alias of the value, is rebound"
            todo.extend(classify_use(rule, r) for r in b.uses)
            continue
        call = rule.parent(arg) if isinstance(arg, cst.Arg) else None
        if not (isinstance(call, cst.Call) and call.args and call.args[0] is arg
                and rule.matches(call.func, FREEZE, OPTIMIZE_FOR_INFERENCE)):
            out.append(u)
            continue
        if id(call) in followed:
            continue  # `model = torch.jit.freeze(model)`: the name's reads include the freeze's own argument
        followed.add(id(call))
        if u.kind == "mode":
            out.append(u)  # its own edit drops the `.eval()`; the uses of the freeze's result follow
        b = binding(rule, value_expr(rule, call))
        if b.problem:
            return out, f"cannot follow the result of `{shown(call.func)}(...)` ({b.problem})"
        if b.target is None:  # used in place: `torch.jit.freeze(m).save(p)`
            todo.append(classify_use(rule, call))
        else:
            if b.rebinds:
                return out, f"`{shown(b.target)}`, the result of `{shown(call.func)}(...)`, is rebound"
            todo.extend(classify_use(rule, r) for r in b.uses)
    return out, None


def _is_alias(rule: Asker, ref: cst.CSTNode) -> bool:
    """``alias = ref``: a plain name bound to the value."""
    assign = rule.parent(ref)
    return (isinstance(assign, cst.Assign) and assign.value is ref and len(assign.targets) == 1
            and isinstance(assign.targets[0].target, cst.Name))


def lowered(rule: Asker, call: cst.Call, depth: int = 0) -> bool:
    """Whether the value of a producing call is lowered to ExecuTorch (lite-interpreter save or
    optimize_for_mobile) in this file, directly or through a name bound to it."""
    if depth > 4:
        return False
    b = binding(rule, value_expr(rule, call))
    for u in (classify_use(rule, r) for r in b.uses):
        if u.kind == "ep" and u.detail in LITE_METHODS | {OPTIMIZE}:
            return True
    for r in b.uses:  # aliases: other = traced
        parent = rule.parent(r)
        if isinstance(parent, cst.Assign) and parent.value is r and len(parent.targets) == 1:
            alias = parent.targets[0].target
            if isinstance(alias, cst.Name):
                sub = binding(rule, r)
                if any(classify_use(rule, x).detail in LITE_METHODS for x in sub.uses):
                    return True
    return False


_IGNORE = re.compile(r"#\s*ts2export:\s*ignore(?:\[([^\]]*)\])?", re.IGNORECASE)
OWNERS = {TRACE: "TSX301", SCRIPT: "TSX302", JIT_LOAD: "TSX304", TRACE_MODULE: "TSX308"}


def suppressed(rule: Asker, node: cst.CSTNode, rule_id: str) -> bool:
    """Whether a `# ts2export: ignore[...]` comment on the node's lines silences ``rule_id`` (then the
    rules of the uses must leave them alone too: the origin stays TorchScript)."""
    pos = rule.position(node)
    lines = rule.context.lines
    for n in {pos.start.line, pos.end.line}:
        m = _IGNORE.search(lines[n - 1]) if 0 < n <= len(lines) else None
        if m:
            if m.group(1) is None:
                return True
            ids = [x.strip().upper() for x in m.group(1).split(",") if x.strip()]
            if not ids or any(rule_id.startswith(x) for x in ids):
                return True
    return False


def ep_use_problem(rule: Asker, use: Use) -> str | None:
    """Why the rule of a use of the program (save, lite save, optimize_for_mobile) will not rewrite it;
    then the producing call must not be rewritten either."""
    call = use.outer
    if not isinstance(call, cst.Call):
        return None
    if use.detail == "save" and argument(call, 0, "f") is None:
        return "`.save()` has no path"
    if use.detail == JIT_SAVE and argument(call, 1, "f") is None:
        return "`torch.jit.save` has no path"
    if use.detail == "_save_for_lite_interpreter":
        if argument(call, 0, "f") is None:
            return "`._save_for_lite_interpreter()` has no path"
        if argument(call, 1, "_extra_files") is not None:
            return "`._save_for_lite_interpreter(..., _extra_files=...)` cannot be lowered as it is"
    if use.detail == "_save_to_buffer_for_lite_interpreter" and argument(call, 0, "_extra_files") is not None:
        return "`._save_to_buffer_for_lite_interpreter(_extra_files=...)` cannot be lowered as it is"
    if use.detail == OPTIMIZE:
        inner = plan_uses(rule, call, lambda ep: "x", "optimized module")
        if inner.problem:
            return f"the result of `optimize_for_mobile` cannot be followed ({inner.problem})"
    return None


def _handed_on(rule: Asker, use: Use, what: str) -> str | None:
    """Why the value cannot be rewritten when a use hands it to code the program model cannot
    follow: stored in a container or an object of another package, put in a collection, yielded.
    There it may be saved, frozen or called with other inputs, which the exported module does not
    take (issue 32). Returns are followed to their callers (:func:`_callers`), arguments of the
    run's functions and classes and of torch's module containers by the program model."""
    if use.kind != "value" or _returned(rule, use.node) or _looked_at(rule, use.node) or not leaves(rule, use.node):
        return None
    holder = rule.parent(use.node)
    if isinstance(holder, cst.Arg):
        call = rule.parent(holder)
        if isinstance(call, cst.Call) and any(n.startswith("builtins.") for n in rule.qualnames(call.func)):
            return None  # `print(m)`, `isinstance(m, nn.Module)`: looked at, not kept
        holder = call
    elif isinstance(holder, (cst.Element, cst.DictElement, cst.StarredElement)):
        holder = rule.parent(holder)
    line = rule.position(use.node).start.line
    shown_holder = f"`{quoting.inline_node(holder)}`" if isinstance(holder, cst.BaseExpression) else "code it cannot follow"
    return (f"the {what} is handed on at line {line} ({shown_holder}), where ts2export cannot follow it: what the "
            "program does with it there (save it, freeze it, call it with other inputs) would meet an exported "
            "module, so it stays as it is; pass it to a function of the project (or bind it to a name the code "
            "uses directly), or check a migration with `ts2export record` and `apply --test`")


def _inert(rule: Asker, ref: cst.CSTNode) -> bool:
    """``torch.jit.optimized_execution(m)`` as a statement of its own: the call builds a context
    manager and drops it (torchapi.INERT_CALLS), so ``m`` is not used there, whatever it is."""
    arg = rule.parent(ref)
    call = rule.parent(arg) if isinstance(arg, cst.Arg) and arg.value is ref else None
    return (isinstance(call, cst.Call) and isinstance(rule.parent(call), cst.Expr)
            and rule.matches(call.func, *INERT_CALLS) is not None)


def _returned(rule: Asker, ref: cst.CSTNode) -> bool:
    """``return m`` or ``return m, meta``: the value goes to the callers (see :func:`_callers` and
    the program model's units)."""
    parent = rule.parent(ref)
    if isinstance(parent, cst.Element):
        parent = rule.parent(rule.parent(parent))
    return isinstance(parent, cst.Return)


def _looked_at(rule: Asker, ref: cst.CSTNode) -> bool:
    """``m is None``, ``if m:``, ``not m``: the value is tested, not kept."""
    parent = rule.parent(ref)
    if isinstance(parent, (cst.Comparison, cst.ComparisonTarget)):
        return True
    if isinstance(parent, cst.UnaryOperation) and isinstance(parent.operator, cst.Not):
        return True
    return isinstance(parent, (cst.If, cst.While, cst.IfExp, cst.Assert)) and parent.test is ref


def _callers(rule: Asker, ret: cst.BaseExpression, plan: Plan, what: str) -> str | None:
    """The artifact is returned by a function: follow the calls of that function in this file, drop
    `.eval()`/`.train(False)` on their results (edits added to ``plan``), refuse what cannot be kept."""
    fn = enclosing(rule, ret, (cst.FunctionDef, cst.Lambda))
    outer = enclosing(rule, fn, (cst.ClassDef, cst.FunctionDef)) if isinstance(fn, cst.FunctionDef) else None
    module = module_of(rule, ret)
    if not isinstance(fn, cst.FunctionDef) or outer is not None or module is None:
        plan.notes.append("it is returned: callers that call `.eval()`/`.train()` on it get NotImplementedError "
                          "(drop those calls; TSX30x follow it within one file only)")
        return None
    calls: list[cst.Call] = []

    class _V(cst.CSTVisitor):
        def visit_Call(self, node: cst.Call) -> None:
            if isinstance(node.func, cst.Name) and node.func.value == fn.name.value and definition(rule, node.func) is fn:
                calls.append(node)

    module.visit(_V())
    for c in calls:
        value = value_expr(rule, c)
        if value is not c:  # load_model(p).eval()
            plan.edits.append(Edit(value, c))
        holder = rule.parent(value)
        targets = (holder.targets if isinstance(holder, cst.Assign) else
                   [holder] if isinstance(holder, (cst.AnnAssign, cst.AugAssign)) else [])
        if any(not isinstance(t.target, cst.Name) for t in targets) and _in_a_module(rule, c):
            # `self.act = helper(...)` in a module: its child, which its `.eval()` / `.train()` reaches
            return (f"the result of `{fn.name.value}()` is stored at line {rule.position(c).start.line} "
                    f"(`{quoting.inline_node(targets[0].target)}`), where ts2export cannot follow it: an exported "
                    "module refuses `.eval()`/`.train()`, which a module holding it passes on")
        b = binding(rule, value)
        if b.problem:
            continue
        for u in (classify_use(rule, r) for r in b.uses):
            line = rule.position(u.node).start.line
            why = _handed_on(rule, u, f"result of `{fn.name.value}()`")
            if why:
                return why
            if u.kind == "mode":
                edit, why = mode_edit(rule, u)
                if edit is None:
                    return f"{why} (on the result of `{fn.name.value}()`, line {line})"
                plan.edits.append(edit)
            elif u.kind == "ep" and not plan.ep_mode:
                return (f"`{fn.name.value}()` returns the {what} and line {line} saves or lowers its result: "
                        "return the ExportedProgram and call `.module()` where it runs")
            elif u.kind == "attr-call" and u.detail not in MODULE_METHODS:
                return f"`.{u.detail}(...)` is called on the result of `{fn.name.value}()` (line {line})"
        for assign, method in b.rebinds:
            if method == "eval" or (method == "train" and is_false(argument(assign.value, 0, "mode"))):
                plan.edits.append(Edit(rule.parent(assign), cst.RemovalSentinel.REMOVE))
    plan.notes.append(f"it is returned by `{fn.name.value}()`: `.eval()` on its results in this file dropped too; "
                      "callers in other files must drop theirs")
    if fn.returns is not None and rule.matches(fn.returns.annotation, *SCRIPT_MODULE_TYPES):
        plan.edits.append(Edit(fn.returns.annotation, cst.parse_expression("torch.nn.Module")))
        plan.imports.append(Import("torch"))
        plan.notes.append(f"`{fn.name.value}()`'s return annotation becomes `torch.nn.Module` (what it returns now)")
    return None


def _in_a_module(rule: Asker, node: cst.CSTNode) -> bool:
    """Whether ``node`` is in a class that is an nn.Module: a base named after torch.nn, or a
    ``forward`` method."""
    cls = enclosing(rule, node, (cst.ClassDef,))
    if cls is None:
        return False
    if any(any(q.startswith("torch.nn.") for q in rule.qualnames(b.value)) for b in cls.bases):
        return True
    return any(isinstance(s, cst.FunctionDef) and s.name.value == "forward" for s in cls.body.body)


#: Return annotations that name what a script or trace made (a function returning its export's module
#: says `torch.nn.Module` instead).
SCRIPT_MODULE_TYPES = ("torch.jit.ScriptModule", "torch.jit._script.ScriptModule", "torch.jit.RecursiveScriptModule",
                       "torch.jit._script.RecursiveScriptModule", "torch.jit.TopLevelTracedModule",
                       "torch.jit._trace.TopLevelTracedModule", "torch.jit.TracedModule")


def export_code(model: str, ex: ExportArgs) -> str:
    kwargs = f", kwargs={ex.kwargs}" if ex.kwargs else ""
    return f"torch.export.export({model}, {ex.args}{kwargs}, dynamic_shapes={ex.shapes})"


def explain(rule: Asker, plan: Plan, value: cst.BaseExpression, comment: str) -> None:
    """Put ``comment`` on its own line above the statement whose ``value`` the plan rewrites."""
    first = next((e for e in plan.edits if e.node is value), None)
    line = rule.parent(value)
    while line is not None and not isinstance(line, cst.SimpleStatementLine):
        line = rule.parent(line)
    if first is None or line is None:
        return
    inside: set[int] = set()

    class _V(cst.CSTVisitor):
        def on_visit(self, node: cst.CSTNode) -> bool:
            inside.add(id(node))
            return True

    line.visit(_V())
    if any(id(e.node) in inside for e in plan.edits if e is not first):
        return  # another edit in the same statement: keep the edits apart
    note = cst.EmptyLine(indent=True, whitespace=cst.SimpleWhitespace(""), comment=quoting.comment(comment))
    new_line = line.deep_replace(value, first.replacement)
    new_line = new_line.with_changes(leading_lines=[*line.leading_lines, note])
    plan.edits[plan.edits.index(first)] = Edit(line, new_line)
