"""Numerical bug: RMSNorm in log space with a handwritten sign, x / |x|, which is 0/0 = NaN wherever x == 0.

Right on N(0, 1) and wide-scale inputs (no exact zeros); NaN on the edge set, which has exact
zeros, where the reference outputs 0. Every row of the edge set also changes its RMS, so this
wrong output cannot be mistaken for an earlier call's answer.

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
        mag = x.abs()
        log_rms = 0.5 * torch.log(x.pow(2).mean(-1, keepdim=True) + self.eps)  # (B, 1)
        return (x / mag) * torch.exp(torch.log(mag) - log_rms) * self.weight
