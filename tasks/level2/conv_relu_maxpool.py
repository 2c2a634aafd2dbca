"""Conv2d(32, 64, 3, padding=1) + ReLU + MaxPool2d(2) on x (32, 32, 128, 128) fp32 -> (32, 64, 64, 64).
2*N*Cout*H*W*Cin*9 = 19.3 GFLOP; moves 96 MiB (64 in, 32 out) plus a 128 MiB intermediate when not fused."""
import torch
import torch.nn as nn

batch_size = 32
in_channels = 32
out_channels = 64
height = 128
width = 128


class Model(nn.Module):
    def __init__(self, in_channels, out_channels):
        super().__init__()
        self.conv = nn.Conv2d(in_channels, out_channels, 3, padding=1)
        self.pool = nn.MaxPool2d(2)

    def forward(self, x):
        return self.pool(torch.relu(self.conv(x)))


def get_inputs():
    return [torch.randn(batch_size, in_channels, height, width)]


def get_init_inputs():
    return [in_channels, out_channels]
