"""slower: PyTorch only, cumsum along dim 1 (writes a full 512 MiB scan) and keeps the last slice divided by R."""
import torch
import torch.nn as nn


class ModelNew(nn.Module):
    def __init__(self, dim):
        super().__init__()
        self.dim = dim

    def forward(self, x):
        r = x.shape[self.dim]
        return torch.cumsum(x, dim=self.dim).select(self.dim, r - 1) / r
