"""slower: PyTorch only, torch.where(x > 20, x, log1p(exp(x))): exp, log1p, a mask and a select, four passes."""
import torch
import torch.nn as nn


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x):
        return torch.where(x > 20, x, torch.log1p(torch.exp(x)))
