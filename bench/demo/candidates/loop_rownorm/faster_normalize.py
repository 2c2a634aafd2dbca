"""F.normalize, vectorised; note it clamps the norm at 1e-12 where the reference divides by zero."""
import torch
import torch.nn as nn


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x):
        return torch.nn.functional.normalize(x, dim=1)
