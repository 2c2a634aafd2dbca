"""x * x instead of pow(2), and the weight folded into the per-row scale before the one big product."""
import torch
import torch.nn as nn


class ModelNew(nn.Module):
    def __init__(self, dim, eps=1e-6):
        super().__init__()
        self.eps = eps
        self.weight = nn.Parameter(torch.randn(dim) * 0.1 + 1.0)

    def forward(self, x):
        scale = torch.rsqrt((x * x).mean(-1, keepdim=True) + self.eps)  # (B, 1)
        return x * (scale * self.weight)  # (B, 1) * (D,) -> (B, D), then one pass over x
