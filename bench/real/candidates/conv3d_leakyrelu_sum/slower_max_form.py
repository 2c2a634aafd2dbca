"""slower: PyTorch only, LeakyReLU as torch.maximum(y, 0.1 * y): a scaled copy and a max over the 128 MiB conv output before the channel sum."""
import torch
import torch.nn as nn


class ModelNew(nn.Module):
    def __init__(self, in_channels, out_channels):
        super().__init__()
        self.conv = nn.Conv3d(in_channels, out_channels, 3, padding=1)

    def forward(self, x):
        y = self.conv(x)
        return torch.maximum(y, y * 0.1).sum(dim=1)
