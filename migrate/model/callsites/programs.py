"""Several entry points (``torch.jit.trace_module``, ``@torch.jit.export`` methods with hints): one
exported program per method, in a dict bound where the call was bound, saved as a pt2 archive
or lowered to one multi-method ExecuTorch program."""

from __future__ import annotations

import libcst as cst

from ts2export.edits import Edit, Import
from ts2export.model.callsites.bindings import binding
from ts2export.model.callsites.examples import dim_name, export_args
from ts2export.model.callsites.models import model_problem
from ts2export.model.callsites.syntax import Asker, JIT_SAVE, argument, code, shown
from ts2export.model.callsites.uses import classify_use, keyword_call, keyword_problem, mode_edit


PACKAGE = "torch.export.pt2_archive._package"
HELPER = '''class MethodAsModule(torch.nn.Module):
    """One method of a module as `forward`, so that torch.export can export it (added by ts2export)."""

    def __init__(self, module, method):
        super().__init__()
        self.module = module
        self.method = method

    def forward(self, *args):
        return getattr(self.module, self.method)(*args)
'''


def plan_trace_module(rule: Asker, node: cst.Call) -> tuple[str | None, list[Edit], list[Import]]:
    """Edits that turn a trace_module call (bound to a name) and the uses of its result into a dict of
    exported programs (``\"model\"`` for forward), or why not."""
    model = argument(node, 0, "mod")
    inputs = argument(node, 1, "inputs")
    if model is None or inputs is None:
        return "it needs a module and a dict of example inputs", [], []
    problem = model_problem(rule, model, "trace")
    if problem:
        return problem, [], []
    if not isinstance(inputs, cst.Dict) or not all(
        isinstance(e, cst.DictElement) and isinstance(e.key, cst.SimpleString) for e in inputs.elements
    ):
        return f"write the example inputs `{shown(inputs)}` as a dict literal {{\"method\": inputs}}", [], []
    pairs = [(e.key.evaluated_value, e.value) for e in inputs.elements]
    return plan_programs(rule, node, model, pairs, inputs.elements[0].key.quote)


def plan_programs(rule: Asker, node: cst.Call, model: cst.BaseExpression, pairs: list[tuple[str, cst.BaseExpression]],
                  quote: str = '"') -> tuple[str | None, list[Edit], list[Import]]:
    """One exported program per (method, example inputs), in a dict bound where ``node`` was bound."""
    dim, imports = dim_name(rule, node)
    assign = rule.parent(node)
    line = rule.parent(assign) if assign is not None else None
    if not (isinstance(assign, cst.Assign) and len(assign.targets) == 1 and isinstance(assign.targets[0].target, cst.Name)
            and isinstance(line, cst.SimpleStatementLine) and len(line.body) == 1):
        return "bind the result to a name in a statement of its own", [], []
    bind_module: cst.BaseStatement | None = None
    if len(pairs) > 1 and not isinstance(model, (cst.Name, cst.Attribute)):
        # each program exports the same module: an expression (`Encoder().eval()`) is evaluated
        # once, where the call evaluated it, into a name of its own
        name = _free_name(rule, f"{assign.targets[0].target.value}_module")
        bind_module = cst.parse_statement(f"{name} = {code(model)}\n")
        model = cst.Name(name)
    b = binding(rule, node)
    if b.problem:
        return b.problem, [], []
    # Lowered to ExecuTorch: one multi-method .pte whose methods are named as in the module (forward),
    # with bounded dims. Saved as a pt2 archive: forward is "model", the name torch.export.load reads.
    kinds = [classify_use(rule, r) for r in b.uses]
    lowered_here = any(u.kind == "ep" and u.detail == "_save_for_lite_interpreter" for u in kinds)
    if lowered_here and any(u.kind == "ep" and u.detail in ("save", JIT_SAVE) for u in kinds):
        return "the programs are both saved as pt2 and lowered to ExecuTorch: do one of them per variable", [], []
    forward_key = "forward" if lowered_here else "model"
    entries: list[str] = []
    methods: dict[str, str] = {}
    for method, example in pairs:
        ex, why = export_args(rule, example, None, dim, lowered_here)
        if ex is None:
            return f"method `{method}`: {why}", [], []
        key = forward_key if method == "forward" else method
        methods[method] = key
        if method == "forward":
            entries.append(f"{quote}{key}{quote}: torch.export.export({code(model)}, {ex.args}, dynamic_shapes={ex.shapes})")
        else:
            entries.append(f"{quote}{method}{quote}: torch.export.export(MethodAsModule({code(model)}, {quote}{method}{quote}), "
                           f"{ex.args}, dynamic_shapes=({ex.shapes},))")
    edits: list[Edit] = []
    for ref in b.uses:
        u = classify_use(rule, ref)
        name = code(ref)
        spelled = keyword_call(rule, u) if (u.detail or "forward") in methods else None
        if spelled is not None:
            return keyword_problem(rule, spelled), [], []
        if u.kind == "call" and not u.detail:
            edits.append(Edit(ref, cst.parse_expression(f"{name}[{quote}{forward_key}{quote}].module()")))
        elif u.kind in ("call", "attr-call") and (u.detail or "forward") in methods:
            attr = rule.parent(ref)
            edits.append(Edit(attr, cst.parse_expression(f"{name}[{quote}{methods[u.detail or 'forward']}{quote}].module()")))
        elif u.kind == "mode":
            edit, why = mode_edit(rule, u)
            if edit is None:
                return why, [], []
            edits.append(edit)
        elif u.kind == "ep" and u.detail in ("save", JIT_SAVE):
            save = u.outer
            if u.detail == "save":
                path, extra = argument(save, 0, "f"), argument(save, 1, "_extra_files")
            else:
                path, extra = argument(save, 1, "f"), argument(save, 2, "_extra_files")
            if path is None:
                return f"the save at line {rule.position(save).start.line} has no path", [], []
            new = f"package_pt2({code(path)}, exported_programs={name}" + (f", extra_files={code(extra)}" if extra is not None else "") + ")"
            edits.append(Edit(save, cst.parse_expression(new)))
            imports = [*imports, Import(PACKAGE, "package_pt2")]
        elif u.kind == "ep" and u.detail == "_save_for_lite_interpreter":
            save = u.outer
            path = argument(save, 0, "f")
            if path is None or argument(save, 1, "_extra_files") is not None:
                return f"the lite-interpreter save at line {rule.position(save).start.line} has no path or has extra files", [], []
            new = (f"pathlib.Path({code(path)}).write_bytes(to_edge_transform_and_lower({name}, "
                   "partitioner=[XnnpackPartitioner()]).to_executorch().buffer)")
            edits.append(Edit(save, cst.parse_expression(new)))
            imports = [*imports, Import("pathlib"), Import("executorch.exir", "to_edge_transform_and_lower"),
                       Import("executorch.backends.xnnpack.partition.xnnpack_partitioner", "XnnpackPartitioner")]
        else:
            return (f"`{shown(u.outer or ref)}` (line {rule.position(ref).start.line}) has no rewrite for a set of "
                    "exported programs"), [], []
    helper = cst.parse_statement(HELPER).with_changes(leading_lines=line.leading_lines)
    new_line = line.with_changes(body=[assign.with_changes(value=cst.parse_expression("{" + ", ".join(entries) + "}"))],
                                 leading_lines=[] if bind_module is not None else [cst.EmptyLine(indent=False)])
    if bind_module is not None:
        bind_module = bind_module.with_changes(leading_lines=[cst.EmptyLine(indent=False)])
    edits.insert(0, Edit(line, cst.FlattenSentinel([helper, *([bind_module] if bind_module is not None else []), new_line])))
    return None, edits, [Import("torch"), *imports]


def _free_name(rule: Asker, wanted: str) -> str:
    """``wanted``, or ``wanted`` with a number, a name the file does not use yet."""
    import re

    source = rule.context.source
    name, n = wanted, 2
    while re.search(rf"\b{re.escape(name)}\b", source):
        name, n = f"{wanted}{n}", n + 1
    return name
