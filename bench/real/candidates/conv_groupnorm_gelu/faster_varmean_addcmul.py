"""faster (hoped): PyTorch only, GroupNorm as var_mean over (N, G, -1) folded into per-channel scale and shift, one addcmul pass, then GELU; expected to tie."""
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
        n, c = y.shape[:2]
        g = self.gn.num_groups
        var, mean = torch.var_mean(y.reshape(n, g, -1), dim=-1, correction=0, keepdim=True)  # (n, g, 1)
        a = torch.rsqrt(var + self.gn.eps) * self.gn.weight.view(1, g, c // g)                # (n, g, c/g)
        b = self.gn.bias.view(1, g, c // g) - mean * a
        shape = (n, c) + (1,) * (y.dim() - 2)
        return F.gelu(torch.addcmul(b.reshape(shape), y, a.reshape(shape)))
