"""normalises columns (dim 0) instead of rows; same shape, different values."""
import torch
import torch.nn as nn


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x):
        return x / x.norm(dim=0, keepdim=True)
