"""What a rule may know about the other files of the run: a small per-file view of the program
model, plain data, answered before the rules run (the rule API hands it to rules)."""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Mapping


@dataclass(frozen=True)
class ProgramView:
    """What a rule may know about the other files of the run, answered by the engine's program
    model (:mod:`ts2export.model`) before the rules run. Plain data, per file.

    ``kinds`` maps the names this file uses (dotted, as a rule's qualified names spell them) to
    what they are in the run: ``"function"``, ``"class"``, ``"script-module-class"`` (a class
    deriving from ``torch.jit.ScriptModule``, whose instances are TorchScript modules), or
    ``"structured-class"`` (a named tuple or a dataclass)."""

    kinds: Mapping[str, str] = field(default_factory=dict)
    #: What the object given to each ``torch.jit.script``/``trace`` call of the file is, followed
    #: across files (parameters through their call sites): ``"module"``, ``"function"``,
    #: ``"class"`` (a class itself) or ``"unknown"``. Keyed by :func:`object_key`.
    objects: Mapping[str, str] = field(default_factory=dict)
    #: What the calls that feed each ``torch.jit.script``/``trace`` call of the file show about its
    #: inputs (the artifact loaded back and called, in this file or another; the scripted object
    #: called later; the model class called in the tests), keyed by :func:`object_key` of the
    #: call: ``{"example": code or None, "sizes": per input, per dim the sizes seen (None:
    #: unknown), "where": ["path:line", ...]}``.
    inputs: Mapping[str, dict] = field(default_factory=dict)
    #: The recurrent layers (``"GRU"``, ``"LSTM"``, ``"RNN"``) in the code each script/trace call
    #: of the file compiles or traces, across files; keyed by :func:`object_key` of the call.
    recurrent: Mapping[str, tuple[str, ...]] = field(default_factory=dict)
    #: The methods other than ``forward`` that the program calls on what each script/trace call of
    #: the file makes, or on the artifacts its unit loads back (``service.encode(x)``): entry points
    #: its exported artifact must offer. Keyed by :func:`object_key` of the call.
    methods: Mapping[str, tuple[str, ...]] = field(default_factory=dict)
    #: For those methods, what their calls show about their inputs (as ``inputs``, per method):
    #: ``{"encode": {"example": ..., "sizes": ..., "where": ...}}``. Keyed by :func:`object_key`.
    method_inputs: Mapping[str, Mapping[str, dict]] = field(default_factory=dict)
    #: The ``torch.jit.script`` calls of the file whose value the program only uses where it made
    #: it: their unit holds script calls only (nothing saves, loads, freezes or traces its value),
    #: keyed by :func:`object_key` of the call.
    alone: frozenset[str] = frozenset()
    #: The Python branches on an input's size (``if x.shape[0] > 3:``) in the ``forward`` methods
    #: each script/trace call of the file reaches, as ``"path:line `test`"``; keyed by
    #: :func:`object_key` of the call.
    size_branches: Mapping[str, tuple[str, ...]] = field(default_factory=dict)
    #: The Python decisions on a size that depends on tensor data (``if matches.size(0) == 0:``
    #: after ``nonzero`` or a boolean mask) in the code each script/trace call of the file reaches,
    #: as ``"path:line `test`"``; keyed by :func:`object_key` of the call.
    data_sizes: Mapping[str, tuple[str, ...]] = field(default_factory=dict)
    #: Where ``torch.jit.is_scripting()`` decides more than checks in the code each script call of
    #: the file compiles, as ``"path:line `call`"``: run eager, the module takes the other side;
    #: keyed by :func:`object_key` of the call.
    scripting: Mapping[str, tuple[str, ...]] = field(default_factory=dict)
    #: The calls packing a padded batch for a recurrent layer (``pack_padded_sequence``) in the code
    #: each script/trace call of the file reaches, as ``"path:line `call`"``; keyed by
    #: :func:`object_key` of the call.
    packed: Mapping[str, tuple[str, ...]] = field(default_factory=dict)
    #: The parameters annotated with ``str`` of the ``forward`` of what each script/trace call of
    #: the file makes, as ``"path:line `param: annotation`"``; keyed by :func:`object_key` of the call.
    strings: Mapping[str, tuple[str, ...]] = field(default_factory=dict)
    #: The names the file imports from a module of the run that only re-exports a library's name
    #: (``from ..compat import torch`` where ``compat.py`` does ``import torch``), spelled as libcst
    #: names them (``..compat.torch``), with that library's name (``torch``): a rule asking about
    #: ``torch.jit.script`` finds ``torch.jit.script(m)`` of such a file.
    reexports: Mapping[str, str] = field(default_factory=dict)

    def library_name(self, name: str) -> str:
        """``name`` with a re-exported library name (see ``reexports``) spelled as the library's."""
        if self.reexports and name:
            head = name
            while True:
                found = self.reexports.get(head)
                if found is not None:
                    return found + name[len(head):]
                if "." not in head.lstrip("."):
                    return name
                head = head.rsplit(".", 1)[0]
        return name

    def kind_of(self, name: str | None) -> str | None:
        return self.kinds.get(name) if name else None

    def recurrent_in(self, scope: str, code: str) -> tuple[str, ...]:
        return tuple(self.recurrent.get(object_key(scope, code), ()))

    def size_branches_in(self, scope: str, code: str) -> tuple[str, ...]:
        return tuple(self.size_branches.get(object_key(scope, code), ()))

    def data_sizes_in(self, scope: str, code: str) -> tuple[str, ...]:
        return tuple(self.data_sizes.get(object_key(scope, code), ()))

    def scripting_in(self, scope: str, code: str) -> tuple[str, ...]:
        return tuple(self.scripting.get(object_key(scope, code), ()))

    def packed_in(self, scope: str, code: str) -> tuple[str, ...]:
        return tuple(self.packed.get(object_key(scope, code), ()))

    def string_inputs_of(self, scope: str, code: str) -> tuple[str, ...]:
        return tuple(self.strings.get(object_key(scope, code), ()))

    def methods_of(self, scope: str, code: str) -> tuple[str, ...]:
        return tuple(self.methods.get(object_key(scope, code), ()))

    def method_inputs_of(self, scope: str, code: str, method: str) -> dict | None:
        """``method_inputs`` of one method of the call ``code`` in definition ``scope``."""
        return self.method_inputs.get(object_key(scope, code), {}).get(method)

    def inputs_of(self, scope: str, code: str) -> dict | None:
        """``inputs`` of the call ``code`` in definition ``scope`` (None when nothing shows them)."""
        return self.inputs.get(object_key(scope, code))

    def is_alone(self, scope: str, code: str) -> bool:
        """Whether the script call ``code`` in ``scope`` is in ``alone``."""
        return object_key(scope, code) in self.alone

    def object_kind(self, scope: str, code: str) -> str:
        """``objects`` for the argument ``code`` of a call in definition ``scope`` ("unknown" when
        the model has no answer)."""
        return self.objects.get(object_key(scope, code), "unknown")


def object_key(scope: str, code: str) -> str:
    """How :class:`ProgramView` names an expression: the definition it is in (qualified name,
    "" at module level) and its code without whitespace or enclosing parentheses."""
    text = re.sub(r"\s+", "", code)
    while text.startswith("(") and text.endswith(")") and _balanced(text[1:-1]):
        text = text[1:-1]
    return f"{scope}|{text}"


def _balanced(text: str) -> bool:
    depth = 0
    for ch in text:
        depth += (ch == "(") - (ch == ")")
        if depth < 0:
            return False
    return depth == 0

