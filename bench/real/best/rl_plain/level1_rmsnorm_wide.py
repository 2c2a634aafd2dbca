# level1/rmsnorm_wide: 2.64x eager (framework_ops), sample 6 of rl_plain
import torch
import torch.nn as nn
import torch.nn.functional as F


class ModelNew(nn.Module):
    def __init__(self, dim, eps=1e-6):
        super().__init__()
        self.eps = eps
        self.weight = nn.Parameter(torch.randn(dim) * 0.1 + 1.0)

    def forward(self, x):
        return F.rms_norm(x, (x.shape[-1],), self.weight, self.eps)