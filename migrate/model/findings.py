"""A finding of the rules' first pass, as the program model needs it (plain data): where it is, its
anchor, whether this run's fix mode writes its fix and what that fix writes, and what its rule
says of TorchScript and torch.export."""

from __future__ import annotations

from dataclasses import dataclass

from ts2export.model.pyfile import Pos


@dataclass(eq=False)
class ScanFinding:
    """A finding of the first pass, as the model needs it (plain data)."""

    rule_id: str
    path: str
    start: Pos
    end: Pos
    anchor: str
    fixable: bool  # a fix exists that this run's mode applies
    message: str
    keeps_torchscript: bool = False
    keeps_tracing: bool = False
    blocks_export: bool = False
    trace_takes_one_path: bool = False  # a trace recorded one path through it; its fix keeps every path
    makes_parameters_leaves: bool = False  # its fix makes parameters written in place leaves again
    proof_failures: tuple[str, ...] = ()  # what export raises on the construct as it is, which its fix takes away
    export_skips_eager_branch: bool = False  # its fix makes export skip the branch that runs only in eager Python
    fix_spans: tuple[tuple[Pos, Pos, str], ...] = ()  # (start, end, code written) of each edit
    defs: tuple[str, ...] = ()  # qualnames of the enclosing definitions, innermost first
    alternative_spans: tuple[tuple[Pos, Pos, str], ...] | None = None  # the second fix its rule offers, if any

    @property
    def where(self) -> str:
        return f"{self.path}:{self.start[0]}"

    @property
    def key(self) -> tuple[str, str]:
        return self.path, self.anchor
