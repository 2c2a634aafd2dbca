"""x[:, 1:] skips the first column (off by one); right shape, wrong sums."""
import torch
import torch.nn as nn


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x):
        return x[:, 1:].sum(dim=1)
