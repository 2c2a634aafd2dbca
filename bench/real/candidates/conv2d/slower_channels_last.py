"""slower: the same convolution run in channels_last layout (input and weight converted, output converted back to NCHW); without TF32 the layout buys little and the two conversions cost ~384 MiB of traffic."""
import torch
import torch.nn as nn
import torch.nn.functional as F


class ModelNew(nn.Module):
    def __init__(self, in_channels, out_channels, kernel_size):
        super().__init__()
        self.conv = nn.Conv2d(in_channels, out_channels, kernel_size, padding=kernel_size // 2)

    def forward(self, x):
        xc = x.contiguous(memory_format=torch.channels_last)
        w = self.conv.weight.contiguous(memory_format=torch.channels_last)
        y = F.conv2d(xc, w, self.conv.bias, stride=1, padding=self.conv.padding)
        return y.contiguous()
