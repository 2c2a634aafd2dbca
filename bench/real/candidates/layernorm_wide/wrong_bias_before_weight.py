"""wrong: normalises correctly but applies the affine in the wrong order, (xhat + bias) * weight instead of xhat * weight + bias."""
import torch
import torch.nn as nn


class ModelNew(nn.Module):
    def __init__(self, normalized_size):
        super().__init__()
        self.ln = nn.LayerNorm(normalized_size)
        nn.init.normal_(self.ln.weight, 1.0, 0.1)
        nn.init.normal_(self.ln.bias, 0.0, 0.1)

    def forward(self, x):
        var, mean = torch.var_mean(x, dim=-1, keepdim=True, correction=0)
        xhat = (x - mean) * torch.rsqrt(var + self.ln.eps)
        return (xhat + self.ln.bias) * self.ln.weight
