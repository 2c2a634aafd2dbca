"""Row L2-normalisation of a (256, 512) fp32 tensor, deliberately slow: a Python loop over rows.
Moves 1 MB; CPU task."""
import torch
import torch.nn as nn

batch_size = 256
dim = 512


class Model(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x):
        # one small op per row on purpose: a vectorised rewrite is much faster
        return torch.stack([row / row.norm() for row in x])


def get_inputs():
    return [torch.randn(batch_size, dim)]


def get_init_inputs():
    return []
