"""the same formula per row in a Python loop, then a stack."""
import torch
import torch.nn as nn


class ModelNew(nn.Module):
    def __init__(self, dim, eps=1e-6):
        super().__init__()
        self.eps = eps
        self.weight = nn.Parameter(torch.randn(dim) * 0.1 + 1.0)

    def forward(self, x):
        return torch.stack([r * torch.rsqrt(r.pow(2).mean() + self.eps) * self.weight for r in x])
