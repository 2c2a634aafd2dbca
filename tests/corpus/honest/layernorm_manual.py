"""LayerNorm written out: mean, biased variance, rsqrt, affine, with the task's nn.LayerNorm holding the parameters.

task: cpu/layernorm
expect: ok
"""
import torch
import torch.nn as nn


class ModelNew(nn.Module):
    def __init__(self, normalized_size):
        super().__init__()
        self.ln = nn.LayerNorm(normalized_size)

    def forward(self, x):
        mean = x.mean(dim=-1, keepdim=True)
        xc = x - mean
        var = (xc * xc).mean(dim=-1, keepdim=True)
        return torch.addcmul(self.ln.bias, xc * torch.rsqrt(var + self.ln.eps), self.ln.weight)
