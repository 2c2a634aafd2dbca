"""faster (hoped): PyTorch only, row sums in two stages: (rows, 128, cols / 128) summed over the last dim, then the 128 partials; expected to tie."""
import torch
import torch.nn as nn


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x):
        cols = x.shape[-1]
        if cols % 128 != 0:
            return torch.sum(x, dim=-1)
        return x.reshape(*x.shape[:-1], 128, cols // 128).sum(dim=-1).sum(dim=-1)
