"""wrong: treats nn.Conv2d as a true convolution and flips the kernel spatially before F.conv2d; PyTorch's conv2d is a cross-correlation, so the output is mirrored tap-wise."""
import torch
import torch.nn as nn
import torch.nn.functional as F


class ModelNew(nn.Module):
    def __init__(self, in_channels, out_channels, kernel_size):
        super().__init__()
        self.conv = nn.Conv2d(in_channels, out_channels, kernel_size, padding=kernel_size // 2)

    def forward(self, x):
        w = torch.flip(self.conv.weight, dims=(2, 3))
        return F.conv2d(x, w, self.conv.bias, padding=self.conv.padding)
