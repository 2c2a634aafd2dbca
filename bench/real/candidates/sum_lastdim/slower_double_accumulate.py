"""slower: PyTorch only, casts to float64 (a 1 GiB copy), sums the rows in double and casts back: more accurate, about three times the traffic."""
import torch
import torch.nn as nn


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x):
        return x.double().sum(dim=-1).to(x.dtype)
