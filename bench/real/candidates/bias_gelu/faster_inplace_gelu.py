"""faster (hoped): PyTorch only, the bias add then aten's in-place gelu_ on that fresh tensor: one allocation fewer, same two passes; expected to tie."""
import torch
import torch.nn as nn


class ModelNew(nn.Module):
    def __init__(self, dim):
        super().__init__()
        self.bias = nn.Parameter(torch.randn(dim) * 0.1)

    def forward(self, x):
        h = torch.add(x, self.bias)  # a new tensor: gelu_ may overwrite it without touching the input
        return torch.ops.aten.gelu_(h)  # exact (erf) GELU, the default approximate="none"
