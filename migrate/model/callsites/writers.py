"""Writers of an artifact path in the file of a reader: which save calls write the same literal
path, and why one of them cannot feed the reader."""

from __future__ import annotations

import libcst as cst

from ts2export.model.callsites.bindings import origin, path_literal
from ts2export.model.callsites.models import script_module_instance
from ts2export.model.callsites.producers import plan_for, plan_instance_save
from ts2export.model.callsites.syntax import Asker, JIT_SAVE, module_of, argument, code, shown


def writers(rule: Asker, path_expr: cst.BaseExpression, methods: list[str] | None = None) -> tuple[str, str | None]:
    """A message suffix naming the save call sites of the same path literal in this file, and the
    reason why one of them cannot feed this reader (a writer that saves one program while the
    reader calls several methods)."""
    value = path_literal(rule, path_expr)
    module = module_of(rule, path_expr)
    if value is None or module is None:
        return "", None
    lines: list[str] = []
    blocked: list[str] = []

    class _V(cst.CSTVisitor):
        def visit_Call(self, node: cst.Call) -> None:
            func = node.func
            saving = rule.matches(func, JIT_SAVE, "torch.export.save")
            receiver = None
            if saving:
                receiver = argument(node, 0, "m") or argument(node, 0, "ep")
            elif isinstance(func, cst.Attribute) and func.attr.value in ("save", "_save_for_lite_interpreter"):
                saving, receiver = func.attr.value, func.value
            if not saving or not any(path_literal(rule, a.value) == value for a in node.args):
                return
            line = rule.position(node).start.line
            lines.append(f"{line} (`{shown(func)}`)")
            source = origin(rule, receiver) if receiver is not None else None
            if saving == "torch.export.save":
                return
            if source is None:
                if (saving == "save" and not methods and script_module_instance(rule, receiver) is not None
                        and node.args and plan_instance_save(rule, node, receiver, node.args[0].value)[0] is not None):
                    return  # a ScriptModule subclass instance exported with its readers' inputs (TSX303)
                blocked.append(f"the writer at line {line} saves a module whose origin is not visible")
                return
            plan = plan_for(rule, source)
            if plan.problem:
                blocked.append(f"the writer at line {line} keeps writing TorchScript "
                               f"(see the finding at line {rule.position(source).start.line})")
            elif methods and not plan.multi:
                blocked.append(f"the reader calls {', '.join(f'`.{m}`' for m in methods)} but the writer at line {line} "
                               "saves one program (forward); export one program per method (see TSX308)")

    module.visit(_V())
    if lines:
        return f"; `{value}` is written in this file at line {', '.join(lines)}", (blocked[0] if blocked else None)
    # Writers in other files are linked by the engine's program model, which holds this reader back
    # while they stay TorchScript.
    return "", None


def pte_path(path: cst.BaseExpression) -> str:
    """Code of an artifact path: kept as the user wrote it. Renaming `.ptl` to `.pte` here would break
    programs whose reader and writer spell the path differently (a literal on one side, a parameter on
    the other); ExecuTorch reads any file name. docs/callsites.md says how to rename by hand."""
    return code(path)
