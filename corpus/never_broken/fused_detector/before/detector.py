"""A small detector with a fusing step, as detection repositories write it."""
import json

import torch
from torch import nn


class ConvBN(nn.Module):
    def __init__(self, cin: int, cout: int):
        super().__init__()
        self.conv = nn.Conv2d(cin, cout, 3, padding=1, bias=False)
        self.bn = nn.BatchNorm2d(cout)
        self.act = nn.ReLU()

    def forward(self, x):
        return self.act(self.bn(self.conv(x)))

    def forward_fuse(self, x):
        return self.act(self.conv(x))


class Detector(nn.Module):
    def __init__(self, classes: int = 4):
        super().__init__()
        self.stem = ConvBN(3, 8)
        self.body = ConvBN(8, 16)
        self.head = nn.Conv2d(16, classes + 2, 1)

    def forward(self, x):
        return self.head(self.body(self.stem(x))).flatten(2).transpose(1, 2)


def fuse_conv_and_bn(conv, bn):
    fused = nn.Conv2d(conv.in_channels, conv.out_channels, conv.kernel_size, conv.stride, conv.padding,
                      bias=True).requires_grad_(False)
    w_conv = conv.weight.clone().view(conv.out_channels, -1)
    w_bn = torch.diag(bn.weight.div(torch.sqrt(bn.eps + bn.running_var)))
    fused.weight.copy_(torch.mm(w_bn, w_conv).view(fused.weight.shape))
    b_conv = torch.zeros(conv.weight.size(0)) if conv.bias is None else conv.bias
    b_bn = bn.bias - bn.weight.mul(bn.running_mean).div(torch.sqrt(bn.running_var + bn.eps))
    fused.bias.copy_(torch.mm(w_bn, b_conv.reshape(-1, 1)).reshape(-1) + b_bn)
    return fused


def fuse(model):
    for m in model.modules():
        if isinstance(m, ConvBN):
            m.conv = fuse_conv_and_bn(m.conv, m.bn)
            delattr(m, "bn")
            m.forward = m.forward_fuse
    return model


def export_torchscript(model, path, names):
    im = torch.zeros(1, 3, 32, 32)
    ts = torch.jit.trace(model, im, strict=False)
    meta = {"stride": 1, "names": names}
    ts.save(path, _extra_files={"config.txt": json.dumps(meta)})
    return ts
