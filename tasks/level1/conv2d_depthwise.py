"""Depthwise 3x3 convolution nn.Conv2d(128, 128, 3, padding=1, groups=128) on x (32, 128, 128, 128) fp32.
2*N*C*H*W*9 = 1.2 GFLOP; moves 512 MiB (256 in, 256 out): memory-bound."""
import torch
import torch.nn as nn

batch_size = 32
channels = 128
kernel_size = 3
height = 128
width = 128


class Model(nn.Module):
    def __init__(self, channels, kernel_size):
        super().__init__()
        self.conv = nn.Conv2d(channels, channels, kernel_size, padding=kernel_size // 2, groups=channels)

    def forward(self, x):
        return self.conv(x)


def get_inputs():
    return [torch.randn(batch_size, channels, height, width)]


def get_init_inputs():
    return [channels, kernel_size]
