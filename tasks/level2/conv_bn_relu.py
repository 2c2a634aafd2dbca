"""Conv2d(32, 64, 3, padding=1) + BatchNorm2d (training mode) + ReLU on x (32, 32, 128, 128) fp32 -> (32, 64, 128, 128).
2*N*Cout*H*W*Cin*9 = 19.3 GFLOP; moves 192 MiB (64 in, 128 out) plus intermediates when not fused."""
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
        self.bn = nn.BatchNorm2d(out_channels)
        nn.init.normal_(self.bn.weight, 1.0, 0.1)
        nn.init.normal_(self.bn.bias, 0.0, 0.1)

    def forward(self, x):
        return torch.relu(self.bn(self.conv(x)))


def get_inputs():
    return [torch.randn(batch_size, in_channels, height, width)]


def get_init_inputs():
    return [in_channels, out_channels]
