"""layer_norm applied row by row in a Python loop, then a stack."""
import torch
import torch.nn as nn


class ModelNew(nn.Module):
    def __init__(self, normalized_size):
        super().__init__()
        self.ln = nn.LayerNorm(normalized_size)

    def forward(self, x):
        return torch.stack([self.ln(row) for row in x])
