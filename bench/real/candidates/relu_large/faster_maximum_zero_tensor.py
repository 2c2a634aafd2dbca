"""faster (hoped): PyTorch only, torch.maximum(x, 0-dim zero tensor): one broadcast binary kernel, one read and one write; expected to tie."""
import torch
import torch.nn as nn


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x):
        return torch.maximum(x, torch.zeros((), device=x.device, dtype=x.dtype))
