"""The plan of each producing call: ``torch.jit.trace`` (modules and plain functions),
``torch.jit.script`` (with its example inputs), ``torch.jit.load`` (one program, or every
program of a pt2 archive when other methods are called)."""

from __future__ import annotations

import libcst as cst

from ts2export.edits import Applicability, Edit, Import
from ts2export.quoting import inline_node
from ts2export.model.callsites.bindings import assigned_value, binding, definition
from ts2export.model.callsites.escapes import escapes as _escapes, references as _references
from ts2export.model.callsites.examples import (
    ExportArgs, example_elements, relative_path, script_names, specialized_but_checked, dim_name, evidence_of,
    export_args, hint_inputs, is_tensor_expr, script_inputs, tensor_shape,
)
from ts2export.model.callsites.models import model_problem, exported_methods, is_function, model_class
from ts2export.model.callsites.plans import Plan, OWNERS, export_code, explain, lowered, plan_uses, suppressed
from ts2export.model.callsites.programs import plan_programs, plan_trace_module
from ts2export.model.feeding import is_test_file
from ts2export.model.callsites.syntax import (
    Asker, EXPORT, EXPORT_LOAD, JIT_LOAD, LITE_METHODS, MODULE_METHODS, MOVE, OPTIMIZE, SCRIPT, TRACE, TRACE_MODULE,
    argument, call_name, code, enclosing, shown,
)
from ts2export.model.callsites.uses import Use, classify_use, keyword_call, keyword_problem, mode_edit, value_expr


def plan_for(rule: Asker, call: cst.Call) -> Plan:
    """The plan of any producing call this family knows."""
    name = call_name(rule, call)
    if name in OWNERS and suppressed(rule, call, OWNERS[name]):
        return Plan(problem="the call is suppressed with `# ts2export: ignore` and stays TorchScript")
    if name == TRACE:
        return plan_trace(rule, call)
    if name == SCRIPT:
        return plan_script(rule, call)
    if name == JIT_LOAD:
        return plan_load(rule, call)
    if name in (EXPORT, EXPORT_LOAD, MOVE):
        return Plan(applicability=Applicability.SAFE, ep_mode=True)
    if name == TRACE_MODULE:
        problem, edits, imports = plan_trace_module(rule, call)
        return Plan(edits, imports, ep_mode=True, problem=problem, multi=True)
    return Plan(problem=f"`{shown(call.func)}(...)` is not a program this tool can export")


FUNCTION_HELPER = '''class FunctionAsModule(torch.nn.Module):
    """A function as `forward`, so that torch.export can export it (added by ts2export)."""

    def __init__(self, fn):
        super().__init__()
        self.fn = fn

    def forward(self, *args):
        return self.fn(*args)
'''


def plan_trace(rule: Asker, call: cst.Call) -> Plan:
    model = argument(call, 0, "func")
    example = argument(call, 1, "example_inputs")
    kw = argument(call, None, "example_kwarg_inputs")
    if model is None:
        return Plan(problem="`torch.jit.trace` without a module")
    problem = model_problem(rule, model, "trace", functions=True) or _expects_warnings(rule, call)
    if problem:
        return Plan(problem=problem)
    dim, imports = dim_name(rule, call)
    ex, why = export_args(rule, example, kw, dim, lowered(rule, call), evidence_of(rule, call))
    if ex is None:
        return Plan(problem=why)
    if is_function(rule, model):
        problem = _function_inputs_problem(rule, model, example)
        if problem:
            return Plan(problem=problem)
        plan = _plan_function(rule, call, model, ex)
    else:
        plan = plan_uses(rule, call, lambda ep: export_code(code(model), ex), "traced module")
        if not plan.problem and ex.comment:
            explain(rule, plan, value_expr(rule, call), ex.comment)
            plan.notes.append("example doubled where it has size 1: the program calls the model at other sizes")
    if plan.problem:
        return plan
    plan.imports = [Import("torch"), *imports]
    if example is not None:
        varying = specialized_but_checked(rule, example, argument(call, None, "check_inputs"))
        if varying:
            return Plan(problem=varying)
    if isinstance(example, cst.Name) and is_tensor_expr(rule, example) is None:
        plan.notes.append(f"assumes `{example.value}` is one tensor (if it is a tuple of inputs, pass `{example.value}` unwrapped)")
    if argument(call, None, "check_inputs") is not None:
        plan.notes.append("`check_inputs` dropped: every dim of size >= 2 is exported dynamic (Dim.AUTO)")
    return plan


def _expects_warnings(rule: Asker, call: cst.Call) -> str | None:
    """A trace inside `with pytest.warns(...)`: the test asserts the tracer's warnings (values baked
    into the trace, numpy conversions), which torch.export neither gives nor, often, survives."""
    node = rule.parent(call)
    while node is not None and not isinstance(node, (cst.FunctionDef, cst.ClassDef, cst.Module)):
        if isinstance(node, cst.With):
            for item in node.items:
                if isinstance(item.item, cst.Call) and rule.matches(item.item.func, "pytest.warns", "pytest.deprecated_call"):
                    return (f"the trace runs inside `with {shown(item.item)}` (line {rule.position(node).start.line}): the "
                            "test expects the tracer's warnings (values baked into the trace), which torch.export does not "
                            "give and may fail on; it tests TorchScript itself, so it stays")
        node = rule.parent(node)
    return None


TENSOR_ANNOTATIONS = {"Tensor", "torch.Tensor", "Optional[Tensor]", "Optional[torch.Tensor]",
                      "typing.Optional[torch.Tensor]", "torch.Tensor | None", "Tensor | None"}


def _function_inputs_problem(rule: Asker, fn: cst.BaseExpression, example: cst.BaseExpression | None) -> str | None:
    """Why a traced function's example cannot be exported as it is: an example whose value is not
    visible goes to a parameter annotated as something other than a tensor (`wavelet: Wavelet`: a
    named tuple, a config object; torch.export's inputs are tensors and pytrees it knows)."""
    target = definition(rule, fn) if isinstance(fn, cst.Name) else None
    if not isinstance(target, cst.FunctionDef) or example is None:
        return None
    elements = example_elements(rule, example)
    if not elements and isinstance(example, cst.Name):
        elements = [example]
    params = list(target.params.params)
    for value, param in zip(elements, params):
        if tensor_shape(rule, value) is not None:
            continue
        annotation = code(param.annotation.annotation) if param.annotation is not None else None
        if annotation is not None and annotation not in TENSOR_ANNOTATIONS:
            what = ("a structure of tensors, whose dynamic shapes ts2export cannot spell from here" if "Tensor" in annotation
                    else "not a tensor: torch.export takes tensors (and lists, tuples and dicts of them)")
            return (f"the example `{shown(value)}` goes to `{param.name.value}: {annotation}` of `{shown(fn)}`, {what}, so the "
                    "export would fail where the trace ran; export a module whose inputs are tensors by hand")
        made = assigned_value(rule, value) if isinstance(value, cst.Name) else value
        if annotation is None and isinstance(made, cst.Call) and is_tensor_expr(rule, made) is None:
            return (f"cannot tell whether the example `{shown(value)}` (from `{shown(made.func)}(...)`) is a tensor, and "
                    f"`{shown(fn)}`'s parameter `{param.name.value}` does not say: torch.export takes tensors (and lists, "
                    "tuples and dicts of them); bind it to a tensor factory call, annotate the parameter, or export by hand")
    return None


def _plan_function(rule: Asker, call: cst.Call, fn: cst.BaseExpression, ex: ExportArgs) -> Plan:
    """A traced plain function: export it through a small ``FunctionAsModule`` wrapper defined just
    before the statement (torch.export.export wants an nn.Module)."""
    if ex.kwargs:
        return Plan(problem=f"`{shown(fn)}` is a function traced with keyword inputs: wrap it in an nn.Module by hand")
    plan = plan_uses(rule, call, lambda ep: f"torch.export.export(FunctionAsModule({code(fn)}), {ex.args}, "
                                            f"dynamic_shapes=({ex.shapes},))", "traced function")
    if plan.problem:
        return plan
    for ref in binding(rule, value_expr(rule, call)).uses:
        use = classify_use(rule, ref)
        if use.kind == "call" and isinstance(use.outer, cst.Call) and any(a.keyword is not None for a in use.outer.args):
            line = rule.position(use.outer).start.line
            return Plan(problem=(f"the traced `{shown(fn)}` is called with keyword arguments (line {line}), which the "
                                 "exported function does not take (its inputs are positional): pass them by position, "
                                 "then run apply again"))
    first = plan.edits[0]
    assign = rule.parent(first.node)
    line = rule.parent(assign) if assign is not None else None
    if not (isinstance(assign, cst.Assign) and assign.value is first.node and isinstance(line, cst.SimpleStatementLine)
            and len(line.body) == 1):
        return Plan(problem=f"`{shown(fn)}` is a function: bind its trace to a name in a statement of its own, or wrap it "
                            "in an nn.Module by hand")
    helper = cst.parse_statement(FUNCTION_HELPER).with_changes(leading_lines=line.leading_lines)
    blank = [cst.EmptyLine(indent=False)] * (2 if isinstance(rule.parent(line), cst.Module) else 1)
    new_line = line.with_changes(body=[assign.with_changes(value=first.replacement)], leading_lines=blank)
    plan.edits[0] = Edit(line, cst.FlattenSentinel([helper, new_line]))
    plan.notes.append(f"`{shown(fn)}` is a function: exported through a `FunctionAsModule` wrapper defined before the statement")
    return plan


def plan_script(rule: Asker, call: cst.Call) -> Plan:
    """Export the scripted module with the inputs the program shows; where it cannot be exported
    but the program only calls it where it made it, run it eager (:func:`plan_eager`)."""
    plan = _plan_script_export(rule, call)
    if plan.problem and not plan.edits:
        eager = plan_eager(rule, call, plan.problem)
        if eager is not None:
            return eager
    elif not plan.problem and not plan.ep_mode and not plan.multi:
        # the export may have to wait (what it exports keeps a construct export rejects, or cannot
        # be followed): the program model then runs the module eager instead, where it may
        alternative = plan_eager(rule, call, "{why}")
        plan.alternative = alternative if alternative is not None and not alternative.problem else None
    return plan


def compares_with_itself(rule: Asker, call: cst.Call, obj: cst.BaseExpression) -> bool:
    """Whether a test would compare ``obj`` with itself if ``torch.jit.script(obj)`` became
    ``obj``: the test function calls ``obj`` itself, or a name it binds to the same expression,
    besides what the script made (`assert_close(op(x), op_jit(x))`; `expected = f(x)` before the
    script; `model = kornia.feature.get_laf_scale` beside `torch.jit.script(kornia.feature.get_laf_scale)`)."""
    if not in_test(rule, call):
        return False
    fn = enclosing(rule, call, (cst.FunctionDef,))
    if fn is None:
        return False
    target = code(obj)
    same = {target}
    found: list[cst.Call] = []

    class _Walk(cst.CSTVisitor):
        def visit_Assign(self, node: cst.Assign) -> None:
            if len(node.targets) == 1 and isinstance(node.targets[0].target, cst.Name):
                name, value = node.targets[0].target.value, code(node.value)
                if value == target:
                    same.add(name)  # `model = kornia.feature.get_laf_scale`
                elif isinstance(obj, cst.Name) and name == target:
                    same.add(value)  # `op = imgops.rgb_to_gray`, then `torch.jit.script(op)`

        def visit_Call(self, node: cst.Call) -> None:
            if node is not call:
                found.append(node)

        def visit_FunctionDef(self, node: cst.FunctionDef) -> bool:
            return node is fn

    fn.visit(_Walk())
    inside = set()
    for arg in call.args:  # the script call's own argument is not a call of the object beside it
        arg.value.visit(_Collect(inside))
    return any(code(c.func) in same for c in found if id(c) not in inside)


class _Collect(cst.CSTVisitor):
    def __init__(self, into: set[int]) -> None:
        self.into = into

    def visit_Call(self, node: cst.Call) -> None:
        self.into.add(id(node))


def in_test(rule: Asker, call: cst.Call) -> bool:
    """Whether ``call`` is in test code: a test module (``test_*.py``, ``*_test.py``, under ``tests/``)
    or a ``test*`` function."""
    if is_test_file(relative_path(rule)):
        return True
    return any(d.rsplit(".", 1)[-1].startswith("test") for d in rule.enclosing_defs(call))


def plan_eager(rule: Asker, call: cst.Call, why: str) -> Plan | None:
    """``torch.jit.script(m)`` whose value the program only calls, in the function that made it:
    nothing saves, loads, freezes, lowers or returns it, and no code reads what only TorchScript
    has (``.code``, ``.graph``, its type), and ``m`` itself is only called afterwards. Compiling
    it only made those calls faster; ``m`` itself computes the same, so the call becomes ``m``
    (unsafe: the module runs eager). ``why``: why it could not be exported, said in the finding."""
    model = argument(call, 0, "obj")
    defs = rule.enclosing_defs(call)
    if model is None or not defs or not rule.context.program.is_alone(defs[0], code(call)):
        return None  # at module level another module may import the value and save it
    decided = rule.context.program.scripting_in(defs[0], code(call))
    if decided:  # TorchScript takes one side there, eager Python the other
        return Plan(problem=(f"{why}; and run eager, it would compute otherwise: `torch.jit.is_scripting()` decides "
                             f"more than checks at {decided[0]}, so it stays TorchScript"))
    if not isinstance(model, (cst.Name, cst.Call)):
        return None
    value = value_expr(rule, call)
    b = binding(rule, value)
    target = b.target
    refs = list(b.uses)
    if b.problem:  # `model = torch.jit.script(model)` in a branch: every use of the name may see it
        if not isinstance(target, cst.Name):
            return None
        from libcst.metadata import ScopeProvider

        scope = rule.get_metadata(ScopeProvider, target, None)
        if scope is None:
            return None
        refs = [r for r in _references(scope, target.value) if isinstance(r, cst.Name) and r is not model]
    original = None
    if isinstance(model, cst.Name) and not (isinstance(target, cst.Name) and target.value == model.value):
        # a scripted module is a copy (its own training flag and attributes; parameters and
        # buffers shared): the eager module is the object itself, so the object may only be
        # called again (`out_orig = pool(x)` beside `scripted(x)`), never changed
        original = _used_after(rule, model, call)
        if original == "changed":
            return None
        if compares_with_itself(rule, call, model):
            # `op_jit = op` beside `assert_close(op(x), op_jit(x))` compares the module with itself:
            # the test would pass whatever the module computes
            return Plan(problem=(f"{why}; and run eager, this test would compare `{shown(model)}` with itself (it calls "
                                 f"both `{shown(model)}` and what the script made), so it stays TorchScript"))
    for u in (classify_use(rule, r) for r in refs):
        if _escapes(rule, u):
            return None
        if original == "called" and u.kind != "call":
            return None  # `scripted.train()` would change the object the program calls as well
    plan = Plan(eager=True)
    plan.edits.append(Edit(call, model))
    plan.notes.append(why)
    explain(rule, plan, call, f"# ts2export: `{inline_node(call)}` only sped up the calls below; the module runs eager "
                              f"(torch.compile({inline_node(model)}) compiles it again)")
    return plan


def _used_after(rule: Asker, name: cst.Name, call: cst.Call) -> str | None:
    """How the object a script call compiled is used after it: None (not at all), "called" (only
    called), or "changed" (any other use, which may change it)."""
    from libcst.metadata import ScopeProvider

    scope = rule.get_metadata(ScopeProvider, name, None)
    if scope is None:
        return "changed"
    end = rule.position(call).end
    found = None
    for ref in _references(scope, name.value):
        pos = rule.position(ref).start
        if (pos.line, pos.column) <= (end.line, end.column):
            continue
        parent = rule.parent(ref)
        if isinstance(parent, cst.Call) and parent.func is ref:
            found = "called"  # the scripted copy and the object compute the same
            continue
        return "changed"
    return found


def _plan_script_export(rule: Asker, call: cst.Call) -> Plan:
    model = argument(call, 0, "obj")
    if model is None:
        return Plan(problem="`torch.jit.script` without an object")
    problem = model_problem(rule, model, "script")
    if problem:
        return Plan(problem=problem)
    example, source = script_inputs(rule, call, model)
    evidence = evidence_of(rule, call)
    recorded = bool(evidence and evidence.get("recorded") and evidence.get("example"))
    if recorded and source != "hint":  # what the program was seen doing beats what the source suggests
        example = cst.parse_expression(evidence["example"])
        source = f"{evidence['where'][0]}"
    elif example is None and evidence is not None and evidence.get("example"):
        example = cst.parse_expression(evidence["example"])
        source = f"calls of the module at {', '.join(evidence['where'][:3])} (shapes and dtypes; ones and zeros)"
        recorded = False
    target = rule.parent(value_expr(rule, call))
    name = code(target.targets[0].target) if isinstance(target, cst.Assign) and len(target.targets) == 1 else code(model)
    if evidence is not None and evidence.get("problem") and source != "hint":
        return Plan(problem=f"in the {evidence['where'][0]}, {evidence['problem']}")
    if example is None and evidence is not None and evidence.get("several"):
        made = evidence["several"]
        return Plan(problem=(
            f"the recorded run scripted {len(made)} different classes through this call ({', '.join(made[:4])}"
            + (", ..." if len(made) > 4 else "") + "), and one export call with one example cannot stand for them "
            "all: export each where it is built and called, or leave this call (a check of scriptability) as it is"))
    if example is None:
        seen = ""
        if evidence is not None:
            seen = (f"the calls at {', '.join(evidence['where'][:3])} pass tensors whose shapes or dtypes are not "
                    "visible; ")
        return Plan(problem=(source + "; " if source else "") + seen + (
            f"`torch.jit.script({shown(model)})` needs example inputs to export and nothing here shows them: add "
            f"`# ts2export: inputs=(torch.ones(2, 8),)` (your shapes; ones/zeros leave the random number generator alone) "
            f"on this line, or `\"{relative_path(rule)}::{name}\" = \"(torch.ones(2, 8),)\"` under "
            "[tool.ts2export.inputs] in pyproject.toml, or run the program under `ts2export record -- python ...` "
            "and apply with `--recording ts2export-recording.json`"))
    dim, imports = dim_name(rule, call)
    if recorded:  # the recording's own dynamic shapes: named dims over the sizes seen, static elsewhere
        ex, why = ExportArgs(evidence["example"], evidence.get("kwargs"), evidence.get("dynamic_shapes") or "None"), None
    else:
        ex, why = export_args(rule, example, None, dim, lowered(rule, call), evidence)
    if ex is None:
        return Plan(problem=f"example inputs from the {source}: {why}")
    plan = plan_uses(rule, call, lambda ep: export_code(code(model), ex), "scripted module")
    if not plan.problem and ex.comment:
        explain(rule, plan, value_expr(rule, call), ex.comment)
    if plan.problem:
        return plan
    entry = exported_methods(rule, model_class(rule, model))
    defs = rule.enclosing_defs(call)
    readers = [m for m in rule.context.program.methods_of(defs[0] if defs else "", code(call)) if m not in entry]
    entry = sorted({*entry, *readers})  # the methods readers call on the artifact, wherever the class is
    if entry and plan.ep_mode and source == "hint":
        names = script_names(rule, call, model)
        hints = {m: hint_inputs(rule, call, names, m) for m in entry}
        if all(hints.values()):
            try:
                pairs = [("forward", example)] + [(m, cst.parse_expression(h)) for m, h in hints.items()]
            except cst.ParserSyntaxError:
                return Plan(problem="an `inputs.<method>=` hint is not a Python expression")
            problem, edits, imports2 = plan_programs(rule, call, model, pairs)
            if problem:
                return Plan(problem=problem)
            multi = Plan(edits, imports2, ep_mode=True, multi=True)
            multi.notes.append(f"one program per entry point (forward as \"model\", {', '.join(entry)}) from the hints")
            return multi
    if entry and plan.ep_mode and source != "hint":
        # the program calls the methods on what this call makes, or on its artifact loaded back:
        # their calls show the inputs (shapes and dtypes; ones and zeros), as forward's did
        scope = defs[0] if defs else ""
        seen = {m: rule.context.program.method_inputs_of(scope, code(call), m) for m in entry}
        refused = [ev for ev in seen.values() if ev and ev.get("problem")]
        if refused:
            return Plan(problem=f"in the {refused[0]['where'][0]}, {refused[0]['problem']}")
        if all(ev and ev.get("example") for ev in seen.values()):
            pairs = [("forward", example)] + [(m, cst.parse_expression(seen[m]["example"])) for m in entry]
            problem, edits, imports2 = plan_programs(rule, call, model, pairs)
            if problem:
                return Plan(problem=problem)
            multi = Plan(edits, imports2, ep_mode=True, multi=True)
            multi.notes.append(f"one program per entry point (forward as \"model\", {', '.join(entry)}); the inputs of "
                               + ", ".join(f"`{m}` from its calls at {', '.join(seen[m]['where'][:2])}" for m in entry))
            return multi
    if entry and plan.ep_mode:
        return Plan(problem=(
            f"the saved artifact offered the `@torch.jit.export` method(s) {', '.join(f'`{m}`' for m in entry)} besides "
            "forward; one exported program has forward only: export each method with its own inputs (e.g. through "
            "`torch.jit.trace_module(model, {\"forward\": x, \"" + entry[0] + "\": y})`, which TSX308 rewrites to one "
            "program per method in a pt2 archive), or add `# ts2export: inputs." + entry[0] + "=(...)` hints next to "
            "the `inputs=` hint" + (", or confirm no reader calls them and remove the decorator" if not readers else "")
            + (f" (the program calls {', '.join(f'`.{m}(...)`' for m in readers)} on the artifact)" if readers else "")))
    plan.imports = [Import("torch"), *([] if recorded else imports)]
    plan.notes.insert(0, f"example inputs from the {source}: `{ex.args}`")
    return plan


def plan_load(rule: Asker, call: cst.Call) -> Plan:
    path = argument(call, 0, "f")
    if path is None:
        return Plan(problem="`torch.jit.load` without a path")
    loc = argument(call, 1, "map_location")
    extra = argument(call, 2, "_extra_files")
    if isinstance(loc, cst.Lambda):
        return Plan(problem="`map_location` is a function: move the loaded program with torch.export.passes.move_to_device_pass(ep, device) by hand")
    load = f"torch.export.load({code(path)}" + (f", extra_files={code(extra)}" if extra is not None else "") + ")"
    imports = [Import("torch")]
    if loc is not None and not (isinstance(loc, cst.Name) and loc.value == "None"):
        load = f"torch.export.passes.move_to_device_pass({load}, {code(loc)})"
        imports.append(Import("torch.export.passes"))
    b = binding(rule, value_expr(rule, call))
    uses = [classify_use(rule, r) for r in b.uses] if not b.problem and b.target is not None else []
    lowered_at = [u for u in uses if u.kind == "ep" and u.detail in LITE_METHODS | {OPTIMIZE}]
    if lowered_at:
        return Plan(problem=(f"the loaded module is lowered for mobile at line {rule.position(lowered_at[0].node).start.line}, "
                             "which stays as it is (see the finding there)"))
    if any(u.kind == "attr-call" and u.detail not in MODULE_METHODS for u in uses):
        return _plan_load_methods(rule, call, path, loc, extra, uses)
    plan = plan_uses(rule, call, lambda ep: load, "loaded module")
    plan.imports = imports
    return plan


def _plan_load_methods(rule: Asker, call: cst.Call, path, loc, extra, uses: list[Use]) -> Plan:
    """A loaded module whose other methods are called: read every program of the pt2 archive
    (TSX308 writes forward as "model" and one program per method) into a dict of modules."""
    if extra is not None:
        return Plan(problem="`_extra_files` with several entry points: read them with `load_pt2(path).extra_files` by hand")
    quote = '"'
    move = f"torch.export.passes.move_to_device_pass(ep, {code(loc)}).module()" if loc is not None and not (
        isinstance(loc, cst.Name) and loc.value == "None") else "ep.module()"
    imports = [Import("torch.export.pt2_archive._package", "load_pt2")]
    if move != "ep.module()":
        imports.append(Import("torch.export.passes"))
    plan = Plan(imports=imports)
    value = value_expr(rule, call)
    plan.edits.append(Edit(value, cst.parse_expression(
        f"{{name: {move} for name, ep in load_pt2({code(path)}).exported_programs.items()}}")))
    methods = []
    for u in uses:
        spelled = keyword_call(rule, u) if u.detail not in MODULE_METHODS - {"forward"} else None
        if spelled is not None:
            return Plan(problem=keyword_problem(rule, spelled))
        if u.kind == "call" and not u.detail:
            plan.edits.append(Edit(u.node, cst.parse_expression(f"{code(u.node)}[{quote}model{quote}]")))
        elif u.kind in ("call", "attr-call") and u.detail not in MODULE_METHODS:
            key = "model" if u.detail == "forward" else u.detail
            methods.append(u.detail)
            plan.edits.append(Edit(rule.parent(u.node), cst.parse_expression(f"{code(u.node)}[{quote}{key}{quote}]")))
        elif u.kind == "mode":
            edit, why = mode_edit(rule, u)
            if edit is None:
                return Plan(problem=why)
            plan.edits.append(edit)
        else:
            return Plan(problem=(f"`{shown(u.outer or u.node)}` (line {rule.position(u.node).start.line}) has no rewrite "
                                 "for a set of exported programs"))
    plan.methods = sorted(set(methods))
    plan.notes.append(f"methods {', '.join(f'`{m}`' for m in sorted(set(methods)))} are read from the pt2 archive as separate "
                      "programs (written by `package_pt2`, see TSX308)")
    return plan


def plan_instance_save(rule: Asker, save: cst.Call, receiver: cst.BaseExpression,
                       path: cst.BaseExpression) -> tuple[str | None, list[Import], str | None]:
    """``m.save(path)`` of an instance of a ``torch.jit.ScriptModule`` subclass (which TSX107 turns
    into an ``nn.Module``): ``torch.export.save(torch.export.export(m, inputs, ...), path)``, with
    the inputs that the artifact's readers in the run pass it (shapes and dtypes; ones and zeros).
    (code, imports, None), or (None, [], why not)."""
    defs = rule.enclosing_defs(save)
    evidence = rule.context.program.inputs_of(defs[0] if defs else "", code(save))
    if evidence is None or not evidence.get("example"):
        return None, [], ("nothing in the checked files calls the artifact it saves with tensors whose shapes and "
                          "dtypes are visible")
    dim, imports = dim_name(rule, save)
    ex, why = export_args(rule, cst.parse_expression(evidence["example"]), None, dim, False, evidence)
    if ex is None:
        return None, [], why
    return f"torch.export.save({export_code(code(receiver), ex)}, {code(path)})", [Import("torch"), *imports], None
