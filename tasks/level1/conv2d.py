"""2D convolution nn.Conv2d(64, 128, 3, padding=1) on x (32, 64, 128, 128) fp32 -> (32, 128, 128, 128).
2*N*Cout*H*W*Cin*9 = 77.3 GFLOP; moves 384 MiB (128 in, 256 out)."""
import torch
import torch.nn as nn

batch_size = 32
in_channels = 64
out_channels = 128
kernel_size = 3
height = 128
width = 128


class Model(nn.Module):
    def __init__(self, in_channels, out_channels, kernel_size):
        super().__init__()
        self.conv = nn.Conv2d(in_channels, out_channels, kernel_size, padding=kernel_size // 2)

    def forward(self, x):
        return self.conv(x)


def get_inputs():
    return [torch.randn(batch_size, in_channels, height, width)]


def get_init_inputs():
    return [in_channels, out_channels, kernel_size]
