"""Conv2d(64, 128, 3, padding=1) + GroupNorm(32 groups) + GELU on x (16, 64, 128, 128) fp32 -> (16, 128, 128, 128).
2*N*Cout*H*W*Cin*9 = 38.7 GFLOP; moves 192 MiB (64 in, 128 out) plus intermediates when not fused."""
import torch
import torch.nn as nn
import torch.nn.functional as F

batch_size = 16
in_channels = 64
out_channels = 128
num_groups = 32
height = 128
width = 128


class Model(nn.Module):
    def __init__(self, in_channels, out_channels, num_groups):
        super().__init__()
        self.conv = nn.Conv2d(in_channels, out_channels, 3, padding=1)
        self.gn = nn.GroupNorm(num_groups, out_channels)
        nn.init.normal_(self.gn.weight, 1.0, 0.1)
        nn.init.normal_(self.gn.bias, 0.0, 0.1)

    def forward(self, x):
        return F.gelu(self.gn(self.conv(x)))


def get_inputs():
    return [torch.randn(batch_size, in_channels, height, width)]


def get_init_inputs():
    return [in_channels, out_channels, num_groups]
