"""LayerNorm over the last dim as a one-group group_norm: a different fused kernel, one pass for the statistics."""
import torch
import torch.nn as nn


class ModelNew(nn.Module):
    def __init__(self, normalized_size):
        super().__init__()
        self.ln = nn.LayerNorm(normalized_size)

    def forward(self, x):
        return torch.nn.functional.group_norm(x, 1, self.ln.weight, self.ln.bias, self.ln.eps)
