"""faster (hoped): PyTorch only, F.rms_norm (no weight) for the normalisation, then one addcmul for * (1 + scale) + shift."""
import torch
import torch.nn as nn
import torch.nn.functional as F


class ModelNew(nn.Module):
    def __init__(self, eps=1e-6):
        super().__init__()
        self.eps = eps

    def forward(self, x, scale, shift):
        y = F.rms_norm(x, (x.shape[-1],), eps=self.eps)
        return torch.addcmul(shift[:, None, :], y, 1 + scale[:, None, :])
