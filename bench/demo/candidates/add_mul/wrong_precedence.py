"""a + b * c (missing parentheses) computes a different expression."""
import torch
import torch.nn as nn


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, a, b, c):
        return a + b * c
