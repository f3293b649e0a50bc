"""How each use of an artifact's value is used: called, put in eval mode, saved or lowered (a use
of the program), read for a TorchScript-only attribute, or passed on as a value."""

from __future__ import annotations

from dataclasses import dataclass

import libcst as cst

from ts2export.edits import Edit
from ts2export.model.callsites.syntax import (
    Asker, EP_METHODS, JIT_SAVE, MODE_METHODS, MOVE, OPTIMIZE, SCRIPT_ONLY_ATTRS, argument, shown,
)


@dataclass
class Use:
    kind: str  # "call", "mode", "attr-call", "ep", "script-attr", "value"
    node: cst.BaseExpression  # the reference
    outer: cst.CSTNode | None = None  # the node that a rewrite of this use replaces
    detail: str = ""


def keyword_call(rule: Asker, u: Use) -> cst.Call | None:
    """The call a use makes (of the module, or of one of its methods) where it passes arguments by
    keyword or unpacks them (`m.forward_head(x, pre_logits=True)`, `m(*xs)`): an exported program
    takes its inputs only in the structure it was exported with (positional or by keyword, one
    spelling), and refuses the other (`ValueError: Ran into a kwarg keyword mismatch`)."""
    call = u.outer if u.kind == "call" else rule.parent(u.outer) if u.kind == "attr-call" else None
    if isinstance(call, cst.Call) and any(a.keyword is not None or a.star for a in call.args):
        return call
    return None


def keyword_problem(rule: Asker, call: cst.Call) -> str:
    """Why a program is not written where the program calls it by keyword (see keyword_call)."""
    return (f"`{shown(call)}` (line {rule.position(call).start.line}) passes arguments by keyword or unpacks them, "
            "and an exported program takes them only as positional inputs in the order it was exported with: "
            "pass them positionally, then apply again")


def classify_use(rule: Asker, ref: cst.BaseExpression) -> Use:
    parent = rule.parent(ref)
    if isinstance(parent, cst.Call) and parent.func is ref:
        return Use("call", ref, parent)
    if isinstance(parent, cst.Attribute) and parent.value is ref:
        grand = rule.parent(parent)
        is_call = isinstance(grand, cst.Call) and grand.func is parent
        name = parent.attr.value
        if is_call and name in MODE_METHODS:
            return Use("mode", ref, grand, name)
        if is_call and name in EP_METHODS:
            return Use("ep", ref, grand, name)
        if name in SCRIPT_ONLY_ATTRS:
            return Use("script-attr", ref, parent, name)
        if is_call and name == "forward":
            return Use("call", ref, grand, name)
        return Use("attr-call" if is_call else "attr", ref, parent, name)
    if isinstance(parent, cst.Arg) and parent.value is ref:
        call = rule.parent(parent)
        if isinstance(call, cst.Call):
            qn = rule.matches(call.func, JIT_SAVE, OPTIMIZE, "torch.export.save", MOVE)
            if qn is not None and call.args and call.args[0] is parent:
                return Use("ep", ref, call, qn)
    return Use("value", ref, None)


def _stmt_of_expr_call(rule: Asker, call: cst.Call) -> cst.SimpleStatementLine | None:
    expr = rule.parent(call)
    if isinstance(expr, cst.Expr) and expr.value is call:
        line = rule.parent(expr)
        if isinstance(line, cst.SimpleStatementLine) and len(line.body) == 1:
            return line
    return None


def mode_edit(rule: Asker, use: Use) -> tuple[Edit | None, str | None]:
    """Edit that drops ``x.eval()`` / ``x.train(False)``; a reason when the call cannot be dropped."""
    call = use.outer
    assert isinstance(call, cst.Call)
    if use.detail == "train":
        arg = argument(call, 0, "mode")
        if not (isinstance(arg, cst.Name) and arg.value == "False"):
            return None, "`.train()` on an exported module is not supported: training mode is fixed at export time"
    line = _stmt_of_expr_call(rule, call)
    if line is not None:
        return Edit(line, cst.RemovalSentinel.REMOVE), None
    return Edit(call, use.node), None


def value_expr(rule: Asker, call: cst.Call) -> cst.BaseExpression:
    """``call`` or ``call.eval()`` when the call's value is put in eval mode in place."""
    parent = rule.parent(call)
    if isinstance(parent, cst.Attribute) and parent.value is call and parent.attr.value == "eval":
        grand = rule.parent(parent)
        if isinstance(grand, cst.Call) and grand.func is parent and not grand.args:
            return grand
    return call


def is_false(node: cst.BaseExpression | None) -> bool:
    return isinstance(node, cst.Name) and node.value == "False"
