"""Library call: row L2-normalisation as one fused F.rms_norm with eps = 0 and a constant weight of 1/sqrt(dim).

rms_norm(x) = x / sqrt(mean(x^2)) = sqrt(dim) * x / ||x||, so a weight of 1/sqrt(dim) gives x / ||x|| exactly as the
reference's per-row loop does, in one pass over the rows; a zero row still gives NaN (0 * rsqrt(0)), as row / 0 does.
eps is passed as 0.0 explicitly: None would mean the dtype's machine epsilon.

task: cpu/loop_rownorm
expect: ok
"""
import torch
import torch.nn as nn
import torch.nn.functional as F


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x):
        dim = x.shape[-1]
        scale = torch.full((dim,), dim ** -0.5, dtype=x.dtype, device=x.device)
        return F.rms_norm(x, (dim,), scale, 0.0)
