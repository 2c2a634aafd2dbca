"""one relu per row in a Python loop, then a stack that copies every row again."""
import torch
import torch.nn as nn


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x):
        return torch.stack([torch.relu(row) for row in x])
