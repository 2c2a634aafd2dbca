"""slower: PyTorch only, torch.where(x > 0, x, expm1(x)): a mask, an expm1 over every element and a select, three passes."""
import torch
import torch.nn as nn


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x):
        return torch.where(x > 0, x, torch.expm1(x))
