"""leaky slope 0.01 below zero instead of 0: small but real errors on every negative input."""
import torch
import torch.nn as nn


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x):
        return torch.where(x >= 0, x, 0.01 * x)
