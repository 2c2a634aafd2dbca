"""a full cumulative sum (writes 4 MB) just to read its last column."""
import torch
import torch.nn as nn


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x):
        return x.cumsum(dim=1)[:, -1].contiguous()
