"""faster (hoped): PyTorch only, mean of squares from one vector_norm read, x * r, then one addcmul for * (1 + scale) + shift: 5 passes over 512 MiB instead of 9."""
import torch
import torch.nn as nn


class ModelNew(nn.Module):
    def __init__(self, eps=1e-6):
        super().__init__()
        self.eps = eps

    def forward(self, x, scale, shift):
        norm = torch.linalg.vector_norm(x, ord=2, dim=-1, keepdim=True)
        r = torch.rsqrt(norm * norm / x.shape[-1] + self.eps)
        return torch.addcmul(shift[:, None, :], x * r, 1 + scale[:, None, :])
