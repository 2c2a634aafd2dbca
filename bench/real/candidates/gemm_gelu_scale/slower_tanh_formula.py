"""slower: PyTorch only, the tanh GELU written out (cube, tanh, affine) as separate in-place passes with the scale folded into the 0.5; about nine passes over the 128 MiB output."""
import math

import torch
import torch.nn as nn


class ModelNew(nn.Module):
    def __init__(self, in_features, out_features, scale):
        super().__init__()
        self.linear = nn.Linear(in_features, out_features)
        self.scale = scale

    def forward(self, x):
        h = torch.addmm(self.linear.bias, x, self.linear.weight.t())
        inner = torch.mul(h, h).mul_(h).mul_(0.044715).add_(h).mul_(math.sqrt(2.0 / math.pi))
        return inner.tanh_().add_(1.0).mul_(h).mul_(0.5 * self.scale)  # 0.5 s h (1 + tanh(...))
