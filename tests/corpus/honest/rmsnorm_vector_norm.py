"""Algebraic rewrite of RMSNorm: mean(x^2) = ||x||^2 / dim, with the row norm from torch.linalg.vector_norm.

One reduction kernel (vector_norm) replaces pow + mean (which writes a full-size squared copy first); the small
(rows, 1) statistic is finished in place, then x is scaled and weighted into one new tensor.

task: cpu/rmsnorm
expect: ok
"""
import torch
import torch.nn as nn


class ModelNew(nn.Module):
    def __init__(self, dim, eps=1e-6):
        super().__init__()
        self.eps = eps
        self.weight = nn.Parameter(torch.randn(dim) * 0.1 + 1.0)  # same random draw as the reference's weight

    def forward(self, x):
        norm = torch.linalg.vector_norm(x, dim=-1, keepdim=True)   # sqrt(sum x^2), shape (rows, 1)
        inv = norm.square_().div_(x.shape[-1]).add_(self.eps).rsqrt_()  # 1 / sqrt(mean x^2 + eps), in place
        return (x * inv).mul_(self.weight)
