"""ELU (alpha = 1) over a (4096, 16384) fp32 tensor: y = x if x > 0 else exp(x) - 1. Moves 512 MiB: memory-bound."""
import torch
import torch.nn as nn
import torch.nn.functional as F

batch_size = 4096
dim = 16384


class Model(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x):
        return F.elu(x, alpha=1.0)


def get_inputs():
    return [torch.randn(batch_size, dim)]


def get_init_inputs():
    return []
