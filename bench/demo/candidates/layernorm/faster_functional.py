"""F.layer_norm called directly, skipping the nn.LayerNorm module call; likely a tie."""
import torch
import torch.nn as nn


class ModelNew(nn.Module):
    def __init__(self, normalized_size):
        super().__init__()
        self.ln = nn.LayerNorm(normalized_size)

    def forward(self, x):
        return torch.nn.functional.layer_norm(x, self.ln.normalized_shape, self.ln.weight, self.ln.bias, self.ln.eps)
