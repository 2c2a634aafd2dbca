"""faster (hoped): PyTorch only, softplus as logaddexp(x, 0) against a 0-dim zero: one stable binary kernel (max + log1p(exp(-|x|))); expected to tie."""
import torch
import torch.nn as nn


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x):
        return torch.logaddexp(x, torch.zeros((), device=x.device, dtype=x.dtype))
