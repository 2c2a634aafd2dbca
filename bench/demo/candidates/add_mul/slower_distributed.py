"""a*c + b*c distributes the product: three full passes and two temporaries instead of two."""
import torch
import torch.nn as nn


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, a, b, c):
        return a * c + b * c
