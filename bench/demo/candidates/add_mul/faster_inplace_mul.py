"""the product is written into the sum's fresh buffer (in place), saving one 2 MB allocation."""
import torch
import torch.nn as nn


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, a, b, c):
        return torch.add(a, b).mul_(c)
