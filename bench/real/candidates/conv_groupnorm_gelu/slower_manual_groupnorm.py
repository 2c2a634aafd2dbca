"""slower: PyTorch only, GroupNorm written out op by op (mean, centred square, mean, divide by sqrt, scale, shift) before GELU: about eight passes over the 128 MiB conv output."""
import torch
import torch.nn as nn
import torch.nn.functional as F


class ModelNew(nn.Module):
    def __init__(self, in_channels, out_channels, num_groups):
        super().__init__()
        self.conv = nn.Conv2d(in_channels, out_channels, 3, padding=1)
        self.gn = nn.GroupNorm(num_groups, out_channels)
        nn.init.normal_(self.gn.weight, 1.0, 0.1)
        nn.init.normal_(self.gn.bias, 0.0, 0.1)

    def forward(self, x):
        y = self.conv(x)
        n, c, h, w = y.shape
        v = y.reshape(n, self.gn.num_groups, -1)
        mean = v.mean(dim=-1, keepdim=True)
        centred = v - mean
        var = (centred * centred).mean(dim=-1, keepdim=True)
        v = centred / torch.sqrt(var + self.gn.eps)
        v = v.reshape(n, c, h, w) * self.gn.weight.view(1, c, 1, 1) + self.gn.bias.view(1, c, 1, 1)
        return F.gelu(v)
