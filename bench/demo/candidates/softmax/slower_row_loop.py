"""one softmax per row in a Python loop, then a stack."""
import torch
import torch.nn as nn


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x):
        return torch.stack([torch.softmax(row, dim=0) for row in x])
