"""ResNet bottleneck block (1x1 256->64, 3x3 64->64, 1x1 64->256, BatchNorm in training mode after each, ReLU,
identity shortcut) on x (32, 256, 56, 56) fp32 -> same shape. FLOPs 3.3 + 7.4 + 3.3 = 14 GFLOP;
moves ~200 MiB (98 in, 98 out) plus ~300 MiB of intermediates when not fused."""
import torch
import torch.nn as nn

batch_size = 32
channels = 256
bottleneck = 64
height = 56
width = 56


def conv_bn(c_in, c_out, k):
    bn = nn.BatchNorm2d(c_out)
    nn.init.normal_(bn.weight, 1.0, 0.1)
    nn.init.normal_(bn.bias, 0.0, 0.1)
    return nn.Sequential(nn.Conv2d(c_in, c_out, k, padding=k // 2, bias=False), bn)


class Model(nn.Module):
    def __init__(self, channels, bottleneck):
        super().__init__()
        self.block1 = conv_bn(channels, bottleneck, 1)
        self.block2 = conv_bn(bottleneck, bottleneck, 3)
        self.block3 = conv_bn(bottleneck, channels, 1)

    def forward(self, x):
        y = torch.relu(self.block1(x))
        y = torch.relu(self.block2(y))
        return torch.relu(self.block3(y) + x)


def get_inputs():
    return [torch.randn(batch_size, channels, height, width)]


def get_init_inputs():
    return [channels, bottleneck]
