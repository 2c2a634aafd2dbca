"""nn.AvgPool2d(2) on x (32, 64, 256, 256) fp32 -> (32, 64, 128, 128). Moves 640 MiB (512 in, 128 out): memory-bound."""
import torch
import torch.nn as nn

batch_size = 32
channels = 64
height = 256
width = 256
kernel_size = 2


class Model(nn.Module):
    def __init__(self, kernel_size):
        super().__init__()
        self.pool = nn.AvgPool2d(kernel_size)

    def forward(self, x):
        return self.pool(x)


def get_inputs():
    return [torch.randn(batch_size, channels, height, width)]


def get_init_inputs():
    return [kernel_size]
