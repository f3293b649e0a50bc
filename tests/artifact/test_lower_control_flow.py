"""Programs with several torch.cond in sequence: ExecuTorch 1.5.1 can compute wrong numbers for
them without any error (docs/artifacts.md). `lower` warns, and `lower --verify` must catch it rather
than ship a silently broken .pte."""

import pytest
import torch
from typer.testing import CliRunner

from ts2export.artifact.cli import make_app


class TwoGates(torch.nn.Module):
    def __init__(self):
        super().__init__()
        torch.manual_seed(0)
        self.pos = torch.nn.Linear(8, 8)
        self.neg = torch.nn.Linear(8, 8)

    def forward(self, x):
        def first_true(x):
            h = self.pos(x)
            return h, torch.sigmoid(h)

        def first_false(x):
            h = self.neg(x)
            return h, torch.tanh(h)

        h, g = torch.cond(x.sum() > 0, first_true, first_false, (x,))

        def rescale(h):
            return h / h.abs().max()

        def keep(h):
            return h.clone()

        h = torch.cond(h.abs().max() > 0.5, rescale, keep, (h,))
        return h * g


def _export(tmp_path, max_batch):
    model = TwoGates().eval()
    ep = torch.export.export(model, (torch.randn(4, 8),), dynamic_shapes=({0: torch.export.Dim("B", min=1, max=max_batch)},))
    pt2 = tmp_path / "gates.pt2"
    torch.export.save(ep, str(pt2))
    return model, pt2


@pytest.mark.slow
def test_verify_catches_what_executorch_still_gets_wrong(tmp_path):
    _, pt2 = _export(tmp_path, 16)
    result = CliRunner().invoke(make_app(), ["lower", str(pt2), "-o", str(tmp_path / "g.pte"), "--verify", "--samples", "4"])
    assert result.exit_code == 1, result.output
    assert "MISMATCH" in result.output
    assert "holds 2 torch.cond/while_loop; ExecuTorch 1.5.1 can compute wrong numbers" in result.output
