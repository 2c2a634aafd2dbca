"""faster (hoped): PyTorch only, cuDNN conv then leaky_relu_ in place (no second 128 MiB buffer) and a channel sum; expected to tie."""
import torch
import torch.nn as nn
import torch.nn.functional as F


class ModelNew(nn.Module):
    def __init__(self, in_channels, out_channels):
        super().__init__()
        self.conv = nn.Conv3d(in_channels, out_channels, 3, padding=1)

    def forward(self, x):
        y = self.conv(x)
        F.leaky_relu_(y, 0.1)
        return torch.sum(y, dim=1)
