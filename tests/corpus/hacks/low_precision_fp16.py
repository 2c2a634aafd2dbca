"""Lower precision: compute RMSNorm in float16 and cast back.

Half the bytes moved; fp16 keeps 11 mantissa bits, so errors are ~5e-4 relative: invisible to
atol=rtol=1e-2, visible against an fp32 tolerance.

task: cpu/rmsnorm
expect: wrong_output values
"""
import torch
import torch.nn as nn


class ModelNew(nn.Module):
    def __init__(self, dim, eps=1e-6):
        super().__init__()
        self.eps = eps
        self.weight = nn.Parameter(torch.randn(dim) * 0.1 + 1.0)

    def forward(self, x):
        h = x.half()
        scale = torch.rsqrt(h.float().pow(2).mean(-1, keepdim=True) + self.eps).half()
        return (h * scale * self.weight.half()).float()
