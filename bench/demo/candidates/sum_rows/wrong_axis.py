"""sums over dim 0 (columns), giving shape (2048,) instead of (512,)."""
import torch
import torch.nn as nn


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x):
        return x.sum(dim=0)
