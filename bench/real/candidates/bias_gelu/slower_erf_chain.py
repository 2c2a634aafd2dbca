"""slower: PyTorch only, exact GELU written out as in-place erf ops after the bias add: six passes over 256 MiB instead of two."""
import math

import torch
import torch.nn as nn


class ModelNew(nn.Module):
    def __init__(self, dim):
        super().__init__()
        self.bias = nn.Parameter(torch.randn(dim) * 0.1)

    def forward(self, x):
        h = x + self.bias
        t = torch.mul(h, 1.0 / math.sqrt(2.0)).erf_()  # erf(h / sqrt 2)
        return t.add_(1.0).mul_(h).mul_(0.5)  # 0.5 h (1 + erf(h / sqrt 2))
