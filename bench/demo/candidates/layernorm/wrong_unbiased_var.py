"""unbiased (n-1) variance where LayerNorm uses the biased one: a 0.05% scale error."""
import torch
import torch.nn as nn


class ModelNew(nn.Module):
    def __init__(self, normalized_size):
        super().__init__()
        self.ln = nn.LayerNorm(normalized_size)

    def forward(self, x):
        mean = x.mean(-1, keepdim=True)
        var = x.var(-1, keepdim=True, unbiased=True)
        return (x - mean) * torch.rsqrt(var + self.ln.eps) * self.ln.weight + self.ln.bias
