"""Transposed convolution nn.ConvTranspose2d(128, 64, 4, stride=2, padding=1) on x (32, 128, 64, 64) fp32
-> (32, 64, 128, 128). 2*N*Cin*H*W*Cout*16 = 34.4 GFLOP; moves 192 MiB (64 in, 128 out)."""
import torch
import torch.nn as nn

batch_size = 32
in_channels = 128
out_channels = 64
kernel_size = 4
stride = 2
padding = 1
height = 64
width = 64


class Model(nn.Module):
    def __init__(self, in_channels, out_channels, kernel_size, stride, padding):
        super().__init__()
        self.conv_t = nn.ConvTranspose2d(in_channels, out_channels, kernel_size, stride=stride, padding=padding)

    def forward(self, x):
        return self.conv_t(x)


def get_inputs():
    return [torch.randn(batch_size, in_channels, height, width)]


def get_init_inputs():
    return [in_channels, out_channels, kernel_size, stride, padding]
