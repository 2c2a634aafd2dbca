"""nn.BatchNorm2d(64) in training mode (batch statistics) on x (16, 64, 256, 256) fp32, random affine.
Moves 512 MiB (256 in, 256 out) plus a statistics pass: memory-bound."""
import torch
import torch.nn as nn

batch_size = 16
channels = 64
height = 256
width = 256


class Model(nn.Module):
    def __init__(self, channels):
        super().__init__()
        self.bn = nn.BatchNorm2d(channels)
        nn.init.normal_(self.bn.weight, 1.0, 0.1)
        nn.init.normal_(self.bn.bias, 0.0, 0.1)

    def forward(self, x):
        return self.bn(x)


def get_inputs():
    return [torch.randn(batch_size, channels, height, width)]


def get_init_inputs():
    return [channels]
