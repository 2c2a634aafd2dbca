"""one norm over dim 1 and one broadcast division instead of 256 per-row ops and a stack."""
import torch
import torch.nn as nn


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x):
        return x / x.norm(dim=1, keepdim=True)  # (B, D) / (B, 1)
