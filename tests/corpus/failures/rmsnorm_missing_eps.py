"""RMSNorm without eps: identical to the reference on every row but an all-zero one, where it gives NaN (0 * inf).

Element-level zeros never make a whole row zero, so this passed until the edge input set gained a zero row.

task: cpu/rmsnorm
expect: wrong_output nonfinite
"""
import torch
import torch.nn as nn


class ModelNew(nn.Module):
    def __init__(self, dim, eps=1e-6):
        super().__init__()
        self.eps = eps
        self.weight = nn.Parameter(torch.randn(dim) * 0.1 + 1.0)

    def forward(self, x):
        return x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True)) * self.weight
