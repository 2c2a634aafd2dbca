"""faster (hoped): PyTorch only, F.celu with alpha 1 (the same function as ELU with alpha 1): one elementwise kernel; expected to tie."""
import torch
import torch.nn as nn
import torch.nn.functional as F


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x):
        return F.celu(x, alpha=1.0)
