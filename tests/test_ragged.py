"""The program model's question "does what an entry point reaches decide in Python on a size that
depends on tensor data?" (migrate/model/ragged.py): torch.export stops at such a decision with
GuardOnDataDependentSymNode, so the call that would export it stays, with that reason."""

from __future__ import annotations

import textwrap

from ts2export.model.program import Program


def _program(files: dict[str, str]) -> Program:
    return Program({path: textwrap.dedent(code).encode() for path, code in files.items()})


def test_decisions_on_a_data_dependent_size_are_found_across_files():
    """What an entry point reaches decides in Python on the size of a tensor that `nonzero`, a
    boolean mask or `unique` made, through a helper's return in another file, a method of the
    module, or a name holding the size; sizes of inputs, and indexing with integers, are not."""
    program = _program({
        "kit/__init__.py": "",
        "kit/geometry.py": """
            import torch

            def mutual(d, th: float):
                vals, idx = d.min(1)
                keep = vals < th
                return torch.stack([torch.nonzero(keep).squeeze(1), idx[keep]], 1)

            def first_rows(d):
                return d[torch.arange(2)]
            """,
        "kit/models.py": """
            import torch
            from torch import nn
            from kit import geometry

            class Matcher(nn.Module):
                def forward(self, a, b):
                    m = geometry.mutual(torch.cdist(a, b), 0.5)
                    if m.size(0) == 0:
                        return torch.zeros(1, 2, dtype=torch.long)
                    return m

            class Unique(nn.Module):
                def labels(self, x):
                    return x.unique()

                def forward(self, x):
                    n = len(self.labels(x))
                    return x * 2 if n > 3 else x

            class Plain(nn.Module):
                def forward(self, x):
                    rows = geometry.first_rows(x)
                    if rows.shape[0] == 2 and x.size(0) > 1:
                        return rows
                    return x
            """,
        "main.py": """
            import torch
            from kit.models import Matcher, Plain, Unique

            a = torch.jit.script(Matcher())
            b = torch.jit.script(Unique())
            c = torch.jit.script(Plain())
            """,
    })
    decided = program.views()["main.py"].data_sizes
    assert decided["|torch.jit.script(Matcher())"] == ("kit/models.py:9 `m.size(0) == 0`",)
    assert decided["|torch.jit.script(Unique())"] == ("kit/models.py:19 `n > 3`",)
    assert "|torch.jit.script(Plain())" not in decided
