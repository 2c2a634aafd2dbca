"""rsqrt of the row sum of squares, one multiply: vectorised, no division."""
import torch
import torch.nn as nn


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x):
        return x * torch.rsqrt((x * x).sum(dim=1, keepdim=True))  # (B, D) * (B, 1)
