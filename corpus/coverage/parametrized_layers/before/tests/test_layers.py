import pytest
import torch

torch_device = "cpu"


class TestPooling:
    @pytest.mark.parametrize('pool_cls,kwargs,input_shape', [
        ('LsePlus2d', {}, (2, 16, 5, 5)),
        ('SimPool1d', {'dim': 16}, (2, 9, 16)),
        pytest.param('AttentionPool', {'dim': 16, 'num_heads': 2}, (2, 9, 16), id='attention'),
    ])
    def test_torchscript(self, pool_cls, kwargs, input_shape):
        import layers
        x = torch.randn(*input_shape, device=torch_device)
        pool = getattr(layers, pool_cls)(**kwargs).to(torch_device)
        pool.eval()
        scripted = torch.jit.script(pool)
        out_orig = pool(x)
        out_script = scripted(x)
        assert torch.allclose(out_orig, out_script, atol=1e-5)

    def test_repeat_half_eager(self):
        import layers
        assert torch.equal(layers.RepeatHalf()(torch.zeros(2, 3)), torch.zeros(2, 3))
