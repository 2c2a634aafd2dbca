"""faster (hoped): PyTorch only, the mean over dim 1 as a batched GEMV: ones(1, R) @ x, times 1/R; fp32 (no TF32), may only tie."""
import torch
import torch.nn as nn


class ModelNew(nn.Module):
    def __init__(self, dim):
        super().__init__()
        self.dim = dim

    def forward(self, x):
        if x.dim() != 3 or self.dim not in (1, -2):
            return x.mean(dim=self.dim)
        r = x.shape[1]
        ones = torch.ones(1, r, device=x.device, dtype=x.dtype)
        return torch.matmul(ones, x).squeeze(1) * (1.0 / r)
