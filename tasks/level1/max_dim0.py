"""Max over dim 0 of a (16384, 8192) fp32 tensor -> values (8192,). Moves 512 MiB in: memory-bound."""
import torch
import torch.nn as nn

rows = 16384
cols = 8192


class Model(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x):
        return torch.max(x, dim=0).values


def get_inputs():
    return [torch.randn(rows, cols)]


def get_init_inputs():
    return []
