"""Names and small helpers the call-site model shares: the torch calls it knows, a node's code,
the qualified name of a call, the definition or module around a node, a call's argument."""

from __future__ import annotations

from typing import Any, Protocol

import libcst as cst

from ts2export.quoting import inline_node


TRACE = "torch.jit.trace"
TRACE_MODULE = "torch.jit.trace_module"
SCRIPT = "torch.jit.script"
JIT_LOAD = "torch.jit.load"
JIT_SAVE = "torch.jit.save"
LITE_LOAD = ("torch.jit._load_for_lite_interpreter", "torch.jit.mobile._load_for_lite_interpreter")
OPTIMIZE = "torch.utils.mobile_optimizer.optimize_for_mobile"
FREEZE = "torch.jit.freeze"
OPTIMIZE_FOR_INFERENCE = "torch.jit.optimize_for_inference"
# Calls that return (a transformed copy of) the module they are given: its keyword.
PASSES = {OPTIMIZE: "script_module", FREEZE: "mod", OPTIMIZE_FOR_INFERENCE: "mod"}
EXPORT = "torch.export.export"
EXPORT_LOAD = "torch.export.load"
MOVE = "torch.export.passes.move_to_device_pass"
RNN_LAYERS = ("torch.nn.GRU", "torch.nn.LSTM", "torch.nn.RNN")
# Methods whose call on an artifact consumes the program itself (not its module()).
EP_METHODS = {"save", "_save_for_lite_interpreter", "_save_to_buffer_for_lite_interpreter"}
# Mode switches that an exported module rejects (NotImplementedError in torch 2.13).
MODE_METHODS = {"eval", "train"}
# Attributes of a ScriptModule that have no counterpart worth keeping on an exported program.
SCRIPT_ONLY_ATTRS = {"code", "graph", "inlined_graph", "code_with_constants", "original_name", "_c"}


def argument(call: cst.Call, index: int | None, keyword: str | None = None) -> cst.BaseExpression | None:
    """The value of a call's argument given by position ``index`` or by ``keyword`` (None if absent)."""
    for arg in call.args:
        if keyword is not None and arg.keyword is not None and arg.keyword.value == keyword:
            return arg.value
    if index is None:
        return None
    positional = [a for a in call.args if a.keyword is None and not a.star]
    return positional[index].value if len(positional) > index else None


def code(node: cst.CSTNode) -> str:
    return cst.Module(body=[]).code_for_node(node)


def shown(node: cst.CSTNode) -> str:
    """A node's code as a message quotes it: one line, without comments, short (ts2export.quoting)."""
    return inline_node(node)


def call_name(rule: Asker, call: cst.Call) -> str | None:
    """The qualified name of a call's function among the ones this family knows."""
    return rule.matches(
        call.func, TRACE, SCRIPT, JIT_LOAD, JIT_SAVE, *LITE_LOAD, OPTIMIZE, EXPORT, EXPORT_LOAD, MOVE,
        TRACE_MODULE, FREEZE, OPTIMIZE_FOR_INFERENCE,
    )


def enclosing(rule: Asker, node: cst.CSTNode, kinds: tuple) -> cst.CSTNode | None:
    current = rule.parent(node)
    while current is not None and not isinstance(current, kinds):
        current = rule.parent(current)
    return current


#: Methods that return the module itself, so that `x = x.eval()` keeps `x` the same artifact.
REBIND_METHODS = {"eval", "train", "to", "cpu", "cuda", "half", "float", "double"}
# Methods of a loaded/traced module that an exported module (a GraphModule) supports as well.
MODULE_METHODS = {
    "to", "cpu", "cuda", "half", "float", "double", "parameters", "named_parameters", "buffers",
    "named_buffers", "state_dict", "modules", "children", "named_modules", "requires_grad_", "zero_grad",
}
LITE_METHODS = {"_save_for_lite_interpreter", "_save_to_buffer_for_lite_interpreter"}


def in_init(rule: Asker, node: cst.CSTNode) -> bool:
    """Whether ``node`` lies in ``__init__`` of a class (compiled submodules there belong to TSX106)."""
    fn = enclosing(rule, node, (cst.FunctionDef,))
    return fn is not None and fn.name.value == "__init__" and isinstance(enclosing(rule, fn, (cst.ClassDef, cst.FunctionDef)), cst.ClassDef)


def module_of(rule: Asker, node: cst.CSTNode) -> cst.Module | None:
    current = node
    while current is not None and not isinstance(current, cst.Module):
        current = rule.parent(current)
    return current


class Asker(Protocol):
    """What the call-site model asks of the rule that checks the file (a :class:`ts2export.rule.Rule`
    is one): libcst metadata of a node, qualified names, the file's text and options
    (``context``), and the program model's view of the other files (``context.program``)."""

    context: Any

    def get_metadata(self, key, node, default=...): ...

    def parent(self, node: cst.CSTNode) -> cst.CSTNode | None: ...

    def position(self, node: cst.CSTNode): ...

    def matches(self, node: cst.CSTNode, *names: str) -> str | None: ...

    def matches_prefix(self, node: cst.CSTNode, *prefixes: str) -> str | None: ...

    def qualnames(self, node: cst.CSTNode) -> set[str]: ...

    def in_source_order(self, items, node_of=None) -> list: ...

    def enclosing_defs(self, node: cst.CSTNode) -> tuple[str, ...]: ...

    def object_kind(self, node: cst.BaseExpression) -> str: ...
