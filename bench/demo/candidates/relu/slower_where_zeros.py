"""a mask tensor, a zeros tensor and a where: three passes and two extra allocations."""
import torch
import torch.nn as nn


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x):
        return torch.where(x > 0, x, torch.zeros_like(x))
