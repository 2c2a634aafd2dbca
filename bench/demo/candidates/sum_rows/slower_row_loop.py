"""one sum per row in a Python loop (512 tiny reductions), then a stack."""
import torch
import torch.nn as nn


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x):
        return torch.stack([row.sum() for row in x])
