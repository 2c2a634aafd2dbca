"""forward takes an extra residual input the reference never passes (signature check)."""
import torch
import torch.nn as nn


class ModelNew(nn.Module):
    def __init__(self, normalized_size):
        super().__init__()
        self.ln = nn.LayerNorm(normalized_size)

    def forward(self, x, residual):
        return self.ln(x + residual)
