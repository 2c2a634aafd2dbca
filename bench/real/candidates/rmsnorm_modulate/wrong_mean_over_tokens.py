"""wrong: PyTorch only, takes the mean of squares over dim 1 (the tokens) instead of the last dim (the features); the shapes still broadcast."""
import torch
import torch.nn as nn


class ModelNew(nn.Module):
    def __init__(self, eps=1e-6):
        super().__init__()
        self.eps = eps

    def forward(self, x, scale, shift):
        r = torch.rsqrt(x.pow(2).mean(1, keepdim=True) + self.eps)
        return torch.addcmul(shift[:, None, :], x * r, 1 + scale[:, None, :])
