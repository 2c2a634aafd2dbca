"""faster (hoped): PyTorch only, torch.addmm (bias folded into the GEMM), then tanh GELU and the scale both in place on the GEMM output: no extra allocations; expected to tie."""
import torch
import torch.nn as nn


class ModelNew(nn.Module):
    def __init__(self, in_features, out_features, scale):
        super().__init__()
        self.linear = nn.Linear(in_features, out_features)
        self.scale = scale

    def forward(self, x):
        h = torch.addmm(self.linear.bias, x, self.linear.weight.t())
        return torch.ops.aten.gelu_(h, approximate="tanh").mul_(self.scale)
