"""no eps under the square root, so a constant row divides 0 by 0."""
import torch
import torch.nn as nn


class ModelNew(nn.Module):
    def __init__(self, normalized_size):
        super().__init__()
        self.ln = nn.LayerNorm(normalized_size)

    def forward(self, x):
        mean = x.mean(-1, keepdim=True)
        var = x.var(-1, keepdim=True, unbiased=False)
        return (x - mean) * torch.rsqrt(var) * self.ln.weight + self.ln.bias
