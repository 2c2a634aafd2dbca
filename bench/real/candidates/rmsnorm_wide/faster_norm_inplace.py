"""faster (hoped): PyTorch only, mean of squares from one vector_norm read, then x * r and an in-place * weight: 5 passes over 256 MiB instead of 7."""
import torch
import torch.nn as nn


class ModelNew(nn.Module):
    def __init__(self, dim, eps=1e-6):
        super().__init__()
        self.eps = eps
        self.weight = nn.Parameter(torch.randn(dim) * 0.1 + 1.0)

    def forward(self, x):
        norm = torch.linalg.vector_norm(x, ord=2, dim=-1, keepdim=True)
        r = torch.rsqrt(norm * norm / x.shape[-1] + self.eps)
        return torch.mul(x, r).mul_(self.weight)
