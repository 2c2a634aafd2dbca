"""torch's fused rms_norm does the square-mean, rsqrt and both products in one kernel."""
import torch
import torch.nn as nn


class ModelNew(nn.Module):
    def __init__(self, dim, eps=1e-6):
        super().__init__()
        self.eps = eps
        self.weight = nn.Parameter(torch.randn(dim) * 0.1 + 1.0)  # same RNG call as the reference

    def forward(self, x):
        return torch.nn.functional.rms_norm(x, (x.shape[-1],), self.weight, self.eps)
